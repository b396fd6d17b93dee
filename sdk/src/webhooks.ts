import { createPublicKey, verify } from 'node:crypto';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
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

/** How far `webhook-timestamp` may be from this machine's clock, as `standardwebhooks` allows. */
const TOLERANCE_SECONDS = 5 * 60;

/** A `whpk_` public key as a KeyObject: its 32 bytes in an SPKI wrapper (RFC 8410). */
function publicKey(key: string): ReturnType<typeof createPublicKey> {
  const raw = Buffer.from(key.slice('whpk_'.length), 'base64');
  if (raw.length !== 32) throw new Error('a whpk_ public key holds 32 bytes');
  return createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw]), format: 'der', type: 'spki' });
}

/** Standard Webhooks `v1a`: any `v1a,<base64 ed25519>` value of webhook-signature verifies `<id>.<timestamp>.<body>` with the key. */
function verifyAsymmetric(key: string, headers: Record<string, string>, payload: string): unknown {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('Missing required headers');
  const seconds = Number(timestamp);
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('Invalid Signature Headers');
  if (Math.abs(Date.now() / 1000 - seconds) > TOLERANCE_SECONDS) throw new WebhookVerificationError('Message timestamp too old or too new');
  const content = Buffer.from(`${id}.${timestamp}.${payload}`);
  const keyObject = publicKey(key);
  for (const value of signatures.split(' ')) {
    const [version, signature] = value.split(',');
    if (version === 'v1a' && signature && verify(null, content, keyObject, Buffer.from(signature, 'base64'))) return JSON.parse(payload);
  }
  throw new WebhookVerificationError('No matching signature found');
}

/**
 * Verifies a delivery per Standard Webhooks and returns its event, typed by `type`. `rawBody` must
 * be the bytes as received, before any JSON parsing. `key` is the endpoint's `whsec_...` secret
 * (signature scheme v1, checked by the official `standardwebhooks` library) or its `whpk_...`
 * public key (v1a, ed25519). Throws `WebhookVerificationError` when a header is missing, the
 * timestamp is more than 5 minutes from this machine's clock, or no signature matches the key.
 */
export function verifyWebhook(key: string, headers: WebhookHeaders, rawBody: string | Uint8Array): Event {
  const payload = typeof rawBody === 'string' ? rawBody : new TextDecoder('utf-8', { fatal: true }).decode(rawBody);
  if (key.startsWith('whpk_')) return verifyAsymmetric(key, flatten(headers), payload) as Event;
  return new Webhook(key).verify(payload, flatten(headers)) as Event;
}
