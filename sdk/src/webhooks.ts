import { Webhook } from 'standardwebhooks';
import type { Event } from './types.js';

export { WebhookVerificationError } from 'standardwebhooks';

/** Request headers as Node.js (`req.headers`), the Fetch API (`request.headers`) or a plain object give them. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

function flatten(headers: WebhookHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  const entries = headers instanceof Headers ? [...headers.entries()] : Object.entries(headers);
  for (const [name, value] of entries) if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
  return flat;
}

/**
 * Verifies a delivery per Standard Webhooks with the official `standardwebhooks` library and returns
 * its event, typed by `type`. `rawBody` must be the bytes as received, before any JSON parsing.
 * Throws `WebhookVerificationError` when a header is missing, the timestamp is more than 5 minutes
 * from this machine's clock, or no signature matches `secret` (the `whsec_...` of the endpoint).
 */
export function verifyWebhook(secret: string, headers: WebhookHeaders, rawBody: string | Uint8Array): Event {
  const payload = typeof rawBody === 'string' ? rawBody : new TextDecoder('utf-8', { fatal: true }).decode(rawBody);
  return new Webhook(secret).verify(payload, flatten(headers)) as Event;
}
