import type { Config } from '../lib/config.js';
import type { Db } from '../db/db.js';
import { pendingMigrations } from '../db/migrate.js';
import { withDeadline } from '../lib/deadline.js';
import type { RateLimitStore } from '../http/ratelimit/store.js';

/**
 * Whether a graceful stop has begun: made once at start, stopped first thing when the process
 * begins to stop, so that GET /readyz answers 503 from then on and load balancers move away.
 */
export class Readiness {
  private stopped = false;

  get stopping(): boolean {
    return this.stopped;
  }

  stop(): void {
    this.stopped = true;
  }
}

/** What the readiness checks use of the service. */
export type ReadinessDeps = { db: Db; config: Pick<Config, 'redisUrl'>; rateLimits: Pick<RateLimitStore, 'ping'>; readiness: Readiness };

/** What GET /readyz checks in a process: the database always, Redis where the process counts requests. */
export interface ReadinessScope {
  redis: boolean;
}

/** A check's name and why it failed: a short sentence that tells nothing about addresses or credentials. */
export interface FailedCheck {
  path: string;
  message: string;
}

export type ReadinessReport = { ready: true; checks: Record<string, 'ok'> } | { ready: false; failed: FailedCheck[] };

/** A readiness probe waits this long at most for the database. */
const DATABASE_DEADLINE_MS = 2000;

/** PostgreSQL's code for a table that does not exist: schema_migrations before the first migration. */
const UNDEFINED_TABLE = '42P01';

async function database(ctx: ReadinessDeps): Promise<FailedCheck | 'ok'> {
  let pending: string[];
  try {
    pending = await withDeadline(pendingMigrations(ctx.db), DATABASE_DEADLINE_MS, 'the database');
  } catch (error) {
    if ((error as { code?: string }).code === UNDEFINED_TABLE) return { path: 'migrations', message: 'the database has no migrations applied' };
    return { path: 'database', message: 'unreachable or not answering' };
  }
  if (pending.length > 0) return { path: 'migrations', message: `not applied: ${pending.join(', ')}` };
  return 'ok';
}

async function redis(ctx: ReadinessDeps): Promise<FailedCheck | 'ok'> {
  try {
    await ctx.rateLimits.ping!();
    return 'ok';
  } catch {
    return { path: 'redis', message: 'unreachable or not answering' };
  }
}

/**
 * Whether this process should be sent traffic: not stopping, its database reachable and migrated
 * to this build, and Redis answering when it is configured and the process counts requests there.
 */
export async function readiness(ctx: ReadinessDeps, scope: ReadinessScope): Promise<ReadinessReport> {
  if (ctx.readiness.stopping) return { ready: false, failed: [{ path: 'shutdown', message: 'the process is stopping' }] };
  const checks: Record<string, 'ok'> = {};
  const failed: FailedCheck[] = [];
  const withRedis = scope.redis && ctx.config.redisUrl !== null && ctx.rateLimits.ping !== undefined;
  const [db, cache] = await Promise.all([database(ctx), withRedis ? redis(ctx) : null]);
  if (db === 'ok') {
    checks.database = 'ok';
    checks.migrations = 'ok';
  } else failed.push(db);
  if (cache === 'ok') checks.redis = 'ok';
  else if (cache) failed.push(cache);
  return failed.length > 0 ? { ready: false, failed } : { ready: true, checks };
}
