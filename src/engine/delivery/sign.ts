import { createHmac, sign as signEd25519, type KeyObject } from 'node:crypto';
import { privateKeyOf, signingKey } from './secrets.js';

/** Private keys opened per `whsk_` key: endpoints are few beside their deliveries (bounded, cleared when full). */
const MAX_KEYS = 1000;
const keys = new Map<string, KeyObject>();

function keyObject(secret: string): KeyObject {
  let key = keys.get(secret);
  if (key === undefined) {
    key = privateKeyOf(secret);
    if (keys.size >= MAX_KEYS) keys.clear();
    keys.set(secret, key);
  }
  return key;
}

/**
 * Standard Webhooks signature (docs/receiving-webhooks.md#verify-every-request) of `<id>.<timestamp>.<body>`, one value per secret,
 * space-separated, so receivers accept while either secret of a rotation is valid: `v1,<base64
 * HMAC-SHA256>` for a `whsec_` secret, `v1a,<base64 ed25519 signature>` for a `whsk_` private key.
 */
export function sign(secrets: string[], id: string, timestampSeconds: number, body: string): string {
  const content = `${id}.${timestampSeconds}.${body}`;
  return secrets
    .map((secret) =>
      secret.startsWith('whsk_')
        ? `v1a,${signEd25519(null, Buffer.from(content), keyObject(secret)).toString('base64')}`
        : `v1,${createHmac('sha256', signingKey(secret)).update(content).digest('base64')}`,
    )
    .join(' ');
}
