import webpush from 'web-push';
import type { Db } from '../../db/db.js';
import type { Clock } from '../../lib/clock.js';
import type { SecretBox } from '../../lib/secretbox.js';

/** The service's VAPID key pair (RFC 8292), both halves base64url as browsers and web-push read them. */
export interface KeyPair {
  publicKey: string;
  privateKey: string;
}

/**
 * The VAPID key pair, made once for the whole installation: the first process to store one wins and
 * every other reads it, so all processes sign with the key browsers subscribed with. The private
 * half is stored sealed under the master key. A process keeps the pair once read; a rotation of the
 * master key does not change it, and processes are restarted after one anyway.
 */
export class VapidKeys {
  private pair: Promise<KeyPair> | null = null;

  constructor(
    private readonly db: Db,
    private readonly secrets: SecretBox,
    private readonly clock: Clock,
  ) {}

  /** The pair, made now if the installation has none yet. A failure is not kept: the next call asks again. */
  get(): Promise<KeyPair> {
    this.pair ??= this.load().catch((error: unknown) => {
      this.pair = null;
      throw error;
    });
    return this.pair;
  }

  async publicKey(): Promise<string> {
    return (await this.get()).publicKey;
  }

  private async load(): Promise<KeyPair> {
    const made = webpush.generateVAPIDKeys();
    await this.db.query(
      `INSERT INTO push_keys (id, public_key, private_key_enc, created_at) VALUES ('vapid', $1, $2, $3) ON CONFLICT (id) DO NOTHING`,
      [made.publicKey, this.secrets.encrypt(made.privateKey), this.clock.now()],
    );
    const [row] = await this.db.query<{ public_key: string; private_key_enc: string }>(
      "SELECT public_key, private_key_enc FROM push_keys WHERE id = 'vapid'",
    );
    return { publicKey: row.public_key, privateKey: this.secrets.decryptOnce(row.private_key_enc) };
  }
}
