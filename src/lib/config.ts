import { parseDuration, parseDurationList } from './durations.js';
import { parseMasterKey } from './secretbox.js';

/**
 * Every setting of the service, read once from the environment at start. A bad value stops the start
 * with a message naming the variable. README's configuration table lists the same names and defaults.
 */
export interface Config {
  port: number;
  host: string;
  databaseUrl: string | null;
  dataDir: string;
  publicUrl: string;
  masterKey: Buffer | null;
  logLevel: string;
  /** SVC_LOG_FORMAT: `lines` (short lines for a person) or `json`; by default lines on a terminal. */
  logFormat: 'json' | 'lines';
  deliveryTimeoutMs: number;
  retryScheduleMs: number[];
  workers: number;
  workerConcurrency: number;
  leaseMs: number;
  pollIntervalMs: number;
  allowPrivateTargets: boolean;
  /** The VAPID subject of Web Push messages: how a push service reaches the operator (mailto: or https:). */
  pushContact: string;
  redisUrl: string | null;
  rateLimitApiKey: number;
  rateLimitPat: number;
  /** Failed authentications (401) per client address per minute; past it, 429 before any look-up. */
  rateLimitUnauthenticated: number;
  /** Prefix of every Redis key, so deployments sharing one Redis stay apart. */
  redisKeyPrefix: string;
  /** Connect and command time-out of Redis: past it the request is counted in memory instead. */
  redisTimeoutMs: number;
  /** Fastify's trustProxy: whether X-Forwarded-For gives the client address (per-address limits). */
  trustProxy: boolean | number | string[];
  bodyLimitBytes: number;
  /** Waits on PostgreSQL: connecting, a statement on the server, an answer on the client, TCP keepalive. */
  dbConnectTimeoutMs: number;
  dbStatementTimeoutMs: number;
  dbQueryTimeoutMs: number;
  dbKeepAliveMs: number;
  /** PostgreSQL connections that carry this process's reads, pipelined (db/postgres.ts). */
  dbReadConnections: number;
  /** SVC_WARM_UP: rounds of requests `svc serve` runs and rolls back before it listens (server/warm-up.ts); 0: none. */
  warmUpRounds: number;
  /** Finished deliveries and events older than this are deleted in the background; 0 keeps everything. */
  retentionMs: number;
  /** SVC_PARTITION_WIDTH: the time range of one partition of the hot tables (src/db/partitions.ts). */
  partitionWidthMs: number;
  /** SVC_ARCHIVE_DIR: where retired partitions are written before they are dropped; null: not written. */
  archiveDir: string | null;
  /** With a value, GET /metrics needs `Authorization: Bearer <it>`. */
  metricsToken: string | null;
  /** A second listener for /healthz, /readyz and /metrics only (how `svc worker` exposes them); null: none. */
  metricsPort: number | null;
  /** A comment line on every event stream this often, so idle connections stay open. */
  streamKeepAliveMs: number;
  /** An endpoint is failing once every attempt has failed for this long (docs/webhooks.md, Failure alerts). */
  alertFailingAfterMs: number;
  /** ... and at least this many of its deliveries fail (wait for a retry, or failed in a row). */
  alertFailingDeliveries: number;
  /** How often each process checks endpoints with recent failures. */
  alertCheckMs: number;
  /** Alert notices of a workspace are counted per window of this length... */
  alertDigestWindowMs: number;
  /** ... and past this many in one window, held for one digest at its end. */
  alertDigestAfter: number;
}

export class ConfigError extends Error {}

export const DEFAULT_RETRY_SCHEDULE = '5m,30m,2h,5h,10h,12h,12h,12h,12h,12h';

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function duration(env: Env, name: string, fallback: string): number {
  const raw = env[name] || fallback;
  const ms = parseDuration(raw);
  if (ms === null) throw new ConfigError(`${name} must be a duration such as 500ms, 10s, 5m or 2h, got "${raw}"`);
  return ms;
}

function positiveDuration(env: Env, name: string, fallback: string): number {
  const ms = duration(env, name, fallback);
  if (ms < 1) throw new ConfigError(`${name} must be at least 1ms, got "${env[name]}"`);
  return ms;
}

function flag(env: Env, name: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '' || raw === '0' || raw === 'false') return false;
  if (raw === '1' || raw === 'true') return true;
  throw new ConfigError(`${name} must be 1, true, 0 or false, got "${raw}"`);
}

function url(env: Env, name: string, protocols: string[]): string | null {
  const raw = env[name];
  if (!raw) return null;
  try {
    const parsed = new URL(raw);
    if (!protocols.includes(parsed.protocol)) throw new Error();
  } catch {
    throw new ConfigError(`${name} must be a URL starting with ${protocols.join(' or ')}, got an invalid value`);
  }
  return raw;
}

/** `SVC_TRUST_PROXY`: false (default), true, a number of proxy hops, or comma-separated addresses/CIDRs. */
function trustProxy(env: Env): boolean | number | string[] {
  const raw = (env.SVC_TRUST_PROXY ?? '').trim();
  if (raw === '' || raw === 'false' || raw === '0') return false;
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  const list = raw.split(',').map((s) => s.trim());
  if (list.some((s) => !/^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(s))) {
    throw new ConfigError(`SVC_TRUST_PROXY must be true, false, a number of hops or comma-separated addresses, got "${raw}"`);
  }
  return list;
}

/**
 * `SVC_RETENTION`: a duration of at least an hour (so a slip such as 30m for 30d is caught), or `0`
 * to keep everything. With partitions narrower than an hour, five partitions' width is enough.
 */
function retention(env: Env, widthMs: number): number {
  const raw = (env.SVC_RETENTION ?? '').trim();
  if (raw === '0') return 0;
  const ms = duration(env, 'SVC_RETENTION', '30d');
  const least = Math.min(3_600_000, 5 * widthMs);
  if (ms < least) throw new ConfigError(`SVC_RETENTION must be 0 (keep everything) or at least ${least >= 3_600_000 ? '1h' : `${least / 60_000}m (5 partitions)`}, got "${raw}"`);
  return ms;
}

/** `SVC_PARTITION_WIDTH`: whole minutes, from a minute to 31 days; a day by default. */
function partitionWidth(env: Env): number {
  const ms = duration(env, 'SVC_PARTITION_WIDTH', '1d');
  if (ms < 60_000 || ms > 31 * 86_400_000 || ms % 60_000 !== 0) {
    throw new ConfigError(`SVC_PARTITION_WIDTH must be whole minutes from 1m to 31d, got "${env.SVC_PARTITION_WIDTH}"`);
  }
  return ms;
}

function metricsToken(env: Env): string | null {
  const raw = env.SVC_METRICS_TOKEN;
  if (!raw) return null;
  if (!/^[\x21-\x7e]{16,256}$/.test(raw)) {
    throw new ConfigError('SVC_METRICS_TOKEN must be 16 to 256 printable characters without spaces');
  }
  return raw;
}

/**
 * `SVC_PUSH_CONTACT`: a mailto: or https: URL push services may use to reach the operator (RFC 8292's
 * `sub`). By default the public URL when it is https; a local http one gets a placeholder address,
 * which Apple's push service refuses (set the variable for Safari).
 */
function pushContact(env: Env, publicUrl: string): string {
  const raw = env.SVC_PUSH_CONTACT;
  if (raw) {
    let parsed: URL | null = null;
    try {
      parsed = new URL(raw);
    } catch {
      parsed = null;
    }
    const usable = parsed && ((parsed.protocol === 'mailto:' && /^[^@\s]+@[^@\s]+$/.test(parsed.pathname)) || (parsed.protocol === 'https:' && parsed.hostname !== 'localhost'));
    if (!usable) throw new ConfigError(`SVC_PUSH_CONTACT must be a mailto: address or an https: URL, got "${raw}"`);
    return raw;
  }
  return publicUrl.startsWith('https:') && new URL(publicUrl).hostname !== 'localhost' ? publicUrl : 'mailto:webmaster@localhost';
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function loadConfig(env: Env = process.env): Config {
  const port = integer(env, 'PORT', 3000, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  const publicUrl = (url(env, 'SVC_PUBLIC_URL', ['http:', 'https:']) ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, '');
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  const logFormat = env.SVC_LOG_FORMAT || (process.stdout.isTTY ? 'lines' : 'json');
  if (logFormat !== 'json' && logFormat !== 'lines') throw new ConfigError(`SVC_LOG_FORMAT must be json or lines, got "${logFormat}"`);

  let masterKey: Buffer | null = null;
  if (env.SVC_MASTER_KEY) {
    masterKey = parseMasterKey(env.SVC_MASTER_KEY);
    if (!masterKey) throw new ConfigError('SVC_MASTER_KEY must be 32 bytes written as 64 hex characters or base64');
  }
  const databaseUrl = url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']);
  if (databaseUrl && !masterKey) {
    throw new ConfigError('SVC_MASTER_KEY is required with DATABASE_URL (generate one with: svc admin master-key)');
  }

  const scheduleText = env.SVC_RETRY_SCHEDULE || DEFAULT_RETRY_SCHEDULE;
  const retryScheduleMs = parseDurationList(scheduleText);
  if (!retryScheduleMs || retryScheduleMs.length === 0) {
    throw new ConfigError(`SVC_RETRY_SCHEDULE must be comma-separated durations such as 5m,30m,2h, got "${scheduleText}"`);
  }

  // A claimed row may wait in its worker for a slot (up to one attempt) and then be attempted (up
  // to another) before its outcome is written; a shorter lease would let a second worker take a
  // row that is still in flight.
  const deliveryTimeoutMs = duration(env, 'SVC_DELIVERY_TIMEOUT', '10s');
  const leaseMs = duration(env, 'SVC_LEASE', '60s');
  if (leaseMs <= 2 * deliveryTimeoutMs) {
    throw new ConfigError(
      `SVC_LEASE (${leaseMs} ms) must be more than twice SVC_DELIVERY_TIMEOUT (${deliveryTimeoutMs} ms): a claimed delivery may wait for a free slot for up to one attempt and then take another`,
    );
  }

  const dbStatementTimeoutMs = positiveDuration(env, 'SVC_DB_STATEMENT_TIMEOUT', '5s');
  const dbQueryTimeoutMs = positiveDuration(env, 'SVC_DB_QUERY_TIMEOUT', '6s');
  if (dbQueryTimeoutMs <= dbStatementTimeoutMs) {
    throw new ConfigError(
      `SVC_DB_QUERY_TIMEOUT (${dbQueryTimeoutMs} ms) must be more than SVC_DB_STATEMENT_TIMEOUT (${dbStatementTimeoutMs} ms): the server cancels a slow statement first, the client gives up only on a silent one`,
    );
  }

  return {
    port,
    host,
    databaseUrl,
    dataDir: env.SVC_DATA_DIR || './data',
    publicUrl,
    masterKey,
    logLevel,
    logFormat,
    deliveryTimeoutMs,
    retryScheduleMs,
    workers: integer(env, 'SVC_WORKERS', 1, 0, 64),
    workerConcurrency: integer(env, 'SVC_WORKER_CONCURRENCY', 2048, 1, 16384),
    leaseMs,
    pollIntervalMs: duration(env, 'SVC_POLL_INTERVAL', '1s'),
    allowPrivateTargets: flag(env, 'SVC_ALLOW_PRIVATE_TARGETS'),
    pushContact: pushContact(env, publicUrl),
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    rateLimitApiKey: integer(env, 'SVC_RATE_LIMIT_API_KEY', 300, 1, 1_000_000_000),
    rateLimitPat: integer(env, 'SVC_RATE_LIMIT_PAT', 120, 1, 1_000_000_000),
    rateLimitUnauthenticated: integer(env, 'SVC_RATE_LIMIT_UNAUTHENTICATED', 30, 1, 1_000_000),
    redisKeyPrefix: env.SVC_REDIS_KEY_PREFIX ?? 'svc:',
    redisTimeoutMs: positiveDuration(env, 'SVC_REDIS_TIMEOUT', '250ms'),
    trustProxy: trustProxy(env),
    bodyLimitBytes: integer(env, 'SVC_BODY_LIMIT', 1_048_576, 1024, 104_857_600),
    dbConnectTimeoutMs: positiveDuration(env, 'SVC_DB_CONNECT_TIMEOUT', '5s'),
    dbStatementTimeoutMs,
    dbQueryTimeoutMs,
    dbKeepAliveMs: duration(env, 'SVC_DB_KEEPALIVE', '10s'),
    dbReadConnections: integer(env, 'SVC_DB_READ_CONNECTIONS', 1, 1, 64),
    warmUpRounds: integer(env, 'SVC_WARM_UP', 20, 0, 1000),
    retentionMs: retention(env, partitionWidth(env)),
    partitionWidthMs: partitionWidth(env),
    archiveDir: env.SVC_ARCHIVE_DIR?.trim() || null,
    metricsToken: metricsToken(env),
    metricsPort: env.SVC_METRICS_PORT ? integer(env, 'SVC_METRICS_PORT', 0, 0, 65535) : null,
    streamKeepAliveMs: positiveDuration(env, 'SVC_STREAM_KEEPALIVE', '15s'),
    alertFailingAfterMs: positiveDuration(env, 'SVC_ALERT_FAILING_AFTER', '15m'),
    alertFailingDeliveries: integer(env, 'SVC_ALERT_FAILING_DELIVERIES', 3, 1, 1000),
    alertCheckMs: positiveDuration(env, 'SVC_ALERT_CHECK', '5s'),
    alertDigestWindowMs: positiveDuration(env, 'SVC_ALERT_DIGEST_WINDOW', '5m'),
    alertDigestAfter: integer(env, 'SVC_ALERT_DIGEST_AFTER', 3, 1, 1000),
  };
}
