import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Decrypted secrets kept per sealed value, so signing a delivery does not decrypt every time. */
const OPENED_CACHE_SIZE = 1000;

/** AES-256-GCM under the master key; stored as `v1.<iv>.<tag>.<ciphertext>` in base64url. */
export class SecretBox {
  private readonly opened = new Map<string, string>();

  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('master key must be 32 bytes');
  }

  encrypt(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv, cipher.getAuthTag(), data].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
  }

  decrypt(sealed: string): string {
    let plain = this.opened.get(sealed);
    if (plain === undefined) {
      plain = this.open(sealed);
      if (this.opened.size >= OPENED_CACHE_SIZE) this.opened.clear();
      this.opened.set(sealed, plain);
    }
    return plain;
  }

  /** Decrypts without keeping the result: for values read rarely (stored responses), which would only crowd out the secrets. */
  decryptOnce(sealed: string): string {
    return this.opened.get(sealed) ?? this.open(sealed);
  }

  private open(sealed: string): string {
    const [version, iv, tag, data] = sealed.split('.');
    if (version !== 'v1') throw new Error('unknown secret encoding');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  }

  /** A key for another purpose (e.g. cursor signing), derived so the master key itself is never reused. */
  deriveKey(purpose: string): Buffer {
    return createHmac('sha256', this.key).update(purpose).digest();
  }
}

export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** `SVC_MASTER_KEY`: 32 bytes as 64 hex characters or base64; null when it is neither. */
export function parseMasterKey(text: string): Buffer | null {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  const bytes = Buffer.from(text, 'base64');
  return bytes.length === 32 ? bytes : null;
}
