import { createHmac } from 'node:crypto';
import { signingKey } from './secrets.js';

/**
 * Standard Webhooks signature (spec 6.3): base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`, one
 * `v1,<sig>` per secret, space-separated, so receivers accept while either secret of a rotation is valid.
 */
export function sign(secrets: string[], id: string, timestampSeconds: number, body: string): string {
  const content = `${id}.${timestampSeconds}.${body}`;
  return secrets.map((secret) => `v1,${createHmac('sha256', signingKey(secret)).update(content).digest('base64')}`).join(' ');
}
