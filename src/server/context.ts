import type { CredentialCache } from '../http/auth/cache.js';
import type { Config } from '../lib/config.js';
import type { Db } from '../db/db.js';
import type { ReadCoalescer } from '../http/coalesce.js';
import type { CursorCodec } from '../http/pagination.js';
import type { Clock } from '../lib/clock.js';
import type { SecretBox } from '../lib/secretbox.js';
import type { Readiness } from './health.js';
import type { Metrics } from '../ops/metrics.js';
import type { Sequencer } from '../engine/log/sequencer.js';
import type { EventHub } from '../events/stream/hub.js';
import type { PushQueue } from '../notifications/push/queue.js';
import type { Outbox } from '../engine/outbox/outbox.js';
import type { ProductCreations } from '../products/create-batch.js';
import type { RateLimitStore } from '../http/ratelimit/store.js';
import type { RecoveryRunner } from '../webhooks/recoveries/runner.js';
import type { WorkerLink } from '../engine/delivery/handoff.js';

/** Dependencies built once at start and handed to every module; tests build their own. */
export interface AppContext {
  config: Config;
  db: Db;
  clock: Clock;
  cursors: CursorCodec;
  secrets: SecretBox;
  /** Rate-limit counters: Redis with REDIS_URL, else memory. Its owner closes it with the database. */
  rateLimits: RateLimitStore;
  /** Valid credentials by token hash; revocations reach it through NOTIFY (see http/auth/cache.ts). */
  credentials: CredentialCache;
  /** Wakes delivery workers after committed writes, or hands them new deliveries (see engine/delivery/handoff.ts). */
  link: WorkerLink;
  /** The one writer of events and deliveries (see engine/outbox/outbox.ts). */
  outbox: Outbox;
  /** Gives committed batches of events their place in the log's order (see engine/log/sequencer.ts). */
  sequencer: Sequencer;
  /** The live event streams of this process (see events/stream/hub.ts). */
  eventStreams: EventHub;
  /** Product creations arriving together, written together (see products/create-batch.ts). */
  productCreations: ProductCreations;
  /** Identical reads in flight share one query (see http/coalesce.ts). */
  reads: ReadCoalescer;
  /** Bulk recoveries of webhook deliveries, worked through in the background (see webhooks/recoveries/runner.ts). */
  recoveries: RecoveryRunner;
  /** Web Push messages of notifications to users' devices, sent in the background (see notifications/push/queue.ts). */
  push: PushQueue;
  /** Prometheus metrics of this process (see ops/metrics.ts); the delivery engine reports to it. */
  metrics: Metrics;
  /** Stopped first thing when a graceful stop begins: GET /readyz answers 503 from then on (see server/health.ts). */
  readiness: Readiness;
}
