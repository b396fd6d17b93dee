import { randomBytes } from 'node:crypto';

/**
 * `whsec_` + base64 of 33 random bytes (44 characters, no padding), drawn again while it contains
 * `+` or `/`: its standard base64 and base64url spellings are then identical, so both the spec's
 * base64url decoding and the Standard Webhooks libraries' base64 decoding give the same key.
 */
export function newSigningSecret(): string {
  for (;;) {
    const text = randomBytes(33).toString('base64');
    if (!/[+/]/.test(text)) return `whsec_${text}`;
  }
}

/** The HMAC key of a `whsec_` secret: the bytes after the prefix, base64url-decoded (spec 6.3). */
export function signingKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64url');
}
