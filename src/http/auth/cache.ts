import { listenChannel } from '../../db/channels.js';
import type { Db } from '../../db/db.js';
import type { Principal } from './principal.js';

export const REVOCATION_CHANNEL = 'credentials_revoked';

interface Entry {
  principal: Principal;
  /** The credential's own expiry, checked against the service clock on every use. */
  expiresAt: Date | null;
  /** performance.now() after which the entry is looked up again. */
  staleAt: number;
}

/**
 * Valid credentials by token hash, so a request costs no database round trip for authentication.
 * Revocation stays immediate: the revoking process forgets the credential at once, and the revoke
 * statement's NOTIFY reaches every other process (API servers, CLI revocations) at commit. The short
 * TTL bounds staleness if a LISTEN connection is down. Unknown or refused tokens are never cached.
 * A look-up's answer may be older than a forget that arrives before it (the look-up read the row
 * before the revoke committed): each forget and flush starts a new generation, and an answer from a
 * look-up begun in an earlier generation is used for its request but never cached.
 */
export class CredentialCache {
  private readonly entries = new Map<string, Entry>();
  private readonly hashById = new Map<string, string>();
  private current = 0;

  constructor(
    private readonly ttlMs = 5_000,
    private readonly maxEntries = 10_000,
  ) {}

  get(tokenHash: string, now: Date): Principal | null {
    const entry = this.entries.get(tokenHash);
    if (!entry) return null;
    if (entry.staleAt <= performance.now() || (entry.expiresAt && entry.expiresAt <= now)) {
      this.delete(tokenHash, entry.principal.credentialId);
      return null;
    }
    return entry.principal;
  }

  /** Credentials cached now. */
  get size(): number {
    return this.entries.size;
  }

  /** Taken before a look-up, and given to set() with its answer. */
  get generation(): number {
    return this.current;
  }

  /** Caches a look-up's answer, unless a forget or a flush came after the look-up began (`generation`). */
  set(tokenHash: string, principal: Principal, expiresAt: Date | null, generation: number): void {
    if (generation !== this.current) return;
    if (this.entries.size >= this.maxEntries) {
      // Maps iterate in insertion order: drop the oldest entry.
      const [oldest, entry] = this.entries.entries().next().value as [string, Entry];
      this.delete(oldest, entry.principal.credentialId);
    }
    this.entries.set(tokenHash, { principal, expiresAt, staleAt: performance.now() + this.ttlMs });
    this.hashById.set(principal.credentialId, tokenHash);
  }

  /** Drops a credential by id (revoked here or, through NOTIFY, elsewhere). */
  forget(credentialId: string): void {
    this.current++;
    const hash = this.hashById.get(credentialId);
    if (hash) this.delete(hash, credentialId);
  }

  /** Follows revocations made by any process on the same database schema (db/channels.ts). */
  async follow(db: Db): Promise<() => Promise<void>> {
    return listenChannel(db, REVOCATION_CHANNEL, (id) => (id ? this.forget(id) : this.clear()));
  }

  clear(): void {
    this.current++;
    this.entries.clear();
    this.hashById.clear();
  }

  private delete(hash: string, credentialId: string): void {
    this.entries.delete(hash);
    this.hashById.delete(credentialId);
  }
}
