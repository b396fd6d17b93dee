import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CredentialCache } from './auth/cache.js';
import type { Config } from './config.js';
import { HELD_CLAIMS_PER_WORKER } from './webhooks/engine/held-claim.js';
import { DeliveryNotifier } from './webhooks/notifier.js';
import type { AppContext } from './context.js';
import type { Db } from './db/db.js';
import { migrate } from './db/migrate.js';
import { openDatabase } from './db/open.js';
import { ReadCoalescer } from './http/coalesce.js';
import { CursorCodec } from './http/pagination.js';
import { systemClock, type Clock } from './lib/clock.js';
import { SecretBox, parseMasterKey } from './lib/secretbox.js';
import { openRateLimitStore } from './ratelimit/open.js';
import type { RateLimitStore } from './ratelimit/store.js';

/**
 * The master key encrypts signing secrets and derives the cursor key. With PostgreSQL it must be
 * configured; the embedded engine generates one beside its data on first start.
 */
export function resolveMasterKey(config: Config): Buffer {
  if (config.masterKey) return config.masterKey;
  const file = join(config.dataDir, 'master.key');
  if (existsSync(file)) {
    const key = parseMasterKey(readFileSync(file, 'utf8').trim());
    if (!key) throw new Error(`${file} does not hold a valid master key`);
    return key;
  }
  mkdirSync(config.dataDir, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(file, key.toString('hex') + '\n', { mode: 0o600 });
  return key;
}

/**
 * The context every command and test builds on: a migrated database and the services around it.
 * Tests pass their own clock and, to share or inspect counters, their own rate-limit store.
 */
export function createContext(
  config: Config,
  db: Db,
  masterKey: Buffer,
  clock: Clock = systemClock,
  deps: { rateLimits?: RateLimitStore } = {},
): AppContext {
  const secrets = new SecretBox(masterKey);
  const rateLimits = deps.rateLimits ?? openRateLimitStore(config);
  return { config, db, clock, secrets, rateLimits, credentials: new CredentialCache(), notifier: new DeliveryNotifier(db, clock, config.leaseMs), reads: new ReadCoalescer(db.engine === 'pglite'), cursors: new CursorCodec(secrets.deriveKey('cursor')) };
}

export async function openContext(config: Config): Promise<AppContext> {
  const masterKey = resolveMasterKey(config);
  // Each delivery worker may keep HELD_CLAIMS_PER_WORKER claims open, each on a connection of its own.
  const db = await openDatabase(config, HELD_CLAIMS_PER_WORKER * Math.max(1, config.workers));
  await migrate(db);
  return createContext(config, db, masterKey);
}
