import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CredentialCache } from '../http/auth/cache.js';
import { ConfigError, type Config } from '../lib/config.js';
import { HOLDS_PER_WORKER } from '../engine/delivery/hold.js';
import { EventHub } from '../events/stream/hub.js';
import { Sequencer } from '../engine/log/sequencer.js';
import { WorkerLink } from '../engine/delivery/handoff.js';
import { Outbox } from '../engine/outbox/outbox.js';
import { ProductCreations } from '../products/create-batch.js';
import type { AppContext } from './context.js';
import type { Db } from '../db/db.js';
import { migrate } from '../db/migrate.js';
import { ensurePartitions } from '../db/partitions.js';
import { openDatabase } from '../db/open.js';
import { ReadCoalescer } from '../http/coalesce.js';
import { CursorCodec } from '../http/pagination.js';
import { systemClock, type Clock } from '../lib/clock.js';
import { SecretBox, parseMasterKey } from '../lib/secretbox.js';
import { Readiness } from './health.js';
import { verifyMasterKey } from './master-key.js';
import { Metrics } from '../ops/metrics.js';
import { dueDeliveries } from '../engine/delivery/due.js';
import { PushQueue, type PushOptions } from '../notifications/push/queue.js';
import { openRateLimitStore } from '../http/ratelimit/open.js';
import type { RateLimitStore } from '../http/ratelimit/store.js';
import { RecoveryRunner } from '../webhooks/recoveries/runner.js';

/** The master key and where it came from, to name it in messages. */
export interface MasterKey {
  key: Buffer;
  source: string;
}

/**
 * The master key encrypts signing secrets and derives the cursor key. With DATABASE_URL it must be
 * configured; the embedded server's data folder gets one generated on first start.
 */
export function resolveMasterKey(config: Config): MasterKey {
  if (config.masterKey) return { key: config.masterKey, source: 'SVC_MASTER_KEY' };
  const file = join(config.dataDir, 'master.key');
  const source = `the master key in ${file}`;
  if (existsSync(file)) {
    const key = parseMasterKey(readFileSync(file, 'utf8').trim());
    if (!key) throw new ConfigError(`${file} does not hold a valid master key (64 hex characters or base64 of 32 bytes)`);
    return { key, source };
  }
  mkdirSync(config.dataDir, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(file, key.toString('hex') + '\n', { mode: 0o600 });
  return { key, source };
}

/** Writes the data folder's key file (after a rotation), replacing it in one step. */
export function storeMasterKeyFile(config: Config, key: Buffer): string {
  const file = join(config.dataDir, 'master.key');
  writeFileSync(`${file}.new`, key.toString('hex') + '\n', { mode: 0o600 });
  renameSync(`${file}.new`, file);
  return file;
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
  deps: { rateLimits?: RateLimitStore; push?: PushOptions } = {},
): AppContext {
  const secrets = new SecretBox(masterKey);
  const rateLimits = deps.rateLimits ?? openRateLimitStore(config);
  const link = new WorkerLink(db, clock, config.leaseMs);
  const sequencer = new Sequencer(db, config.pollIntervalMs);
  const outbox = new Outbox(db, link, sequencer);
  const metrics = new Metrics({ poolStats: () => db.poolStats(), refusedStatements: () => db.refusedStatements(), dueDeliveries: (now) => dueDeliveries(db, now) }, clock);
  return {
    config,
    db,
    clock,
    secrets,
    rateLimits,
    credentials: new CredentialCache(),
    link,
    outbox,
    sequencer,
    eventStreams: new EventHub({ db, sequencer, pollIntervalMs: config.pollIntervalMs }),
    productCreations: new ProductCreations(db, outbox),
    reads: new ReadCoalescer(),
    recoveries: new RecoveryRunner(db, clock),
    cursors: new CursorCodec(secrets.deriveKey('cursor')),
    push: new PushQueue({ db, clock, secrets, config, recorded: (outcome) => metrics.pushed(outcome) }, deps.push),
    metrics,
    readiness: new Readiness(),
  };
}

/**
 * The context of a command: the database opened (on the embedded default, the data folder's
 * server: see db/embedded/folder.ts for `owner`; `quiet` keeps its lines off stderr, for commands
 * whose output is read by scripts) and migrated, and the master key checked against it; a wrong
 * key stops here with one line.
 */
export async function openContext(config: Config, options: { owner?: boolean; quiet?: boolean } = {}): Promise<AppContext> {
  // Each delivery worker may keep HOLDS_PER_WORKER holds open, each on a connection of its own.
  const db = await openDatabase(config, {
    owner: options.owner,
    heldConnections: HOLDS_PER_WORKER * Math.max(1, config.workers),
    log: options.quiet ? () => {} : undefined,
  });
  try {
    const masterKey = resolveMasterKey(config);
    await migrate(db);
    const ctx = createContext(config, db, masterKey.key);
    // Before the first request or claim: a process started after its partitions ran out (stopped
    // for longer than the ones made ahead) would otherwise write rows that have nowhere to go.
    await ensurePartitions(db, ctx.clock.now(), config.partitionWidthMs);
    await verifyMasterKey(db, ctx.secrets, masterKey.source, ctx.clock.now());
    // The VAPID key pair is made at the first start, under the key just checked.
    await ctx.push.keys.get();
    return ctx;
  } catch (error) {
    await db.close().catch(() => {});
    throw error;
  }
}
