import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import type { SecretBox } from '../../lib/secretbox.js';

/**
 * `whsec_` + base64 of 33 random bytes (44 characters, no padding), drawn again while it contains
 * `+` or `/`: its standard base64 and base64url spellings are then identical, so both base64url
 * decoding (signingKey) and the Standard Webhooks libraries' base64 decoding give the same key.
 */
export function newSigningSecret(): string {
  for (;;) {
    const text = randomBytes(33).toString('base64');
    if (!/[+/]/.test(text)) return `whsec_${text}`;
  }
}

/** The HMAC key of a `whsec_` secret: the bytes after the prefix, base64url-decoded (the same bytes as base64 for the secrets newSigningSecret draws). */
export function signingKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64url');
}

/** An ed25519 private key as PKCS#8 DER is this prefix and the 32-byte seed (RFC 8410). */
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');

/**
 * A new ed25519 key pair for `v1a` signatures (Standard Webhooks): the private key as `whsk_` +
 * base64 of its 32-byte seed, which the service keeps sealed, and the public key as `whpk_` +
 * base64 of its 32 bytes, which receivers verify with.
 */
export function newSigningKey(): { secret: string; publicKey: string } {
  const { privateKey } = generateKeyPairSync('ed25519');
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(PKCS8_ED25519.length);
  const secret = `whsk_${seed.toString('base64')}`;
  return { secret, publicKey: publicKeyOf(secret) };
}

/** The private KeyObject of a `whsk_` key. */
export function privateKeyOf(secret: string): KeyObject {
  const seed = Buffer.from(secret.slice('whsk_'.length), 'base64');
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed]), format: 'der', type: 'pkcs8' });
}

/** The `whpk_` public key of a `whsk_` private key. */
export function publicKeyOf(secret: string): string {
  const jwk = createPublicKey(privateKeyOf(secret)).export({ format: 'jwk' });
  return `whpk_${Buffer.from(jwk.x as string, 'base64url').toString('base64')}`;
}

/** The secrets that sign a delivery now: the current one, plus the previous one inside its 24 h overlap. */
export function signingSecrets(box: SecretBox, row: { secret_enc: string; previous_secret_enc: string | null; previous_secret_expires_at: Date | null }, now: Date): string[] {
  const secrets = [box.decrypt(row.secret_enc)];
  if (row.previous_secret_enc && row.previous_secret_expires_at && row.previous_secret_expires_at > now) {
    secrets.push(box.decrypt(row.previous_secret_enc));
  }
  return secrets;
}
