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

/** The part of Node's crypto that checks an ed25519 signature (the SDK is also bundled for browsers, so it is looked up when needed). */
interface Ed25519 {
  createPublicKey(options: { key: Uint8Array; format: 'der'; type: 'spki' }): unknown;
  verify(algorithm: null, data: Uint8Array, key: unknown, signature: Uint8Array): boolean;
}

function nodeCrypto(): Ed25519 {
  const runtime = (globalThis as { process?: { getBuiltinModule?(id: string): unknown } }).process;
  const crypto = runtime?.getBuiltinModule?.('node:crypto') as Ed25519 | undefined;
  if (!crypto) throw new Error('v1a signatures are verified with node:crypto (Node.js 20.16 or later)');
  return crypto;
}

const base64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

/** An ed25519 public key as SPKI DER is this prefix and its 32 bytes (RFC 8410). */
const SPKI_ED25519 = [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00];

/** Standard Webhooks `v1a`: any `v1a,<base64 ed25519>` value of webhook-signature verifies `<id>.<timestamp>.<body>` with the `whpk_` key. */
function verifyAsymmetric(key: string, headers: Record<string, string>, payload: string): unknown {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('Missing required headers');
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('Invalid Signature Headers');
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) throw new WebhookVerificationError('Message timestamp too old or too new');
  const raw = base64(key.slice('whpk_'.length));
  if (raw.length !== 32) throw new WebhookVerificationError('Invalid public key: a whpk_ key holds 32 bytes');
  const crypto = nodeCrypto();
  const publicKey = crypto.createPublicKey({ key: Uint8Array.from([...SPKI_ED25519, ...raw]), format: 'der', type: 'spki' });
  const content = new TextEncoder().encode(`${id}.${timestamp}.${payload}`);
  for (const value of signatures.split(' ')) {
    const [version, signature] = value.split(',');
    if (version !== 'v1a' || !signature) continue;
    let bytes: Uint8Array;
    try {
      bytes = base64(signature);
    } catch {
      continue;
    }
    if (crypto.verify(null, content, publicKey, bytes)) return JSON.parse(payload);
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
