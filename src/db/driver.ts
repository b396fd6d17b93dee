import postgres from 'postgres';
import type { Breaker } from './breaker.js';
import { driverTypes } from './types.js';

const TYPES = driverTypes();

export interface PoolOptions {
  /** The server's URL, without `options` (they are `settings`). */
  url: string;
  /** Settings sent when a connection starts (PostgreSQL's `options` startup parameter). */
  settings: string;
  max: number;
  /**
   * Statements a connection carries at once: many for reads, which then share its round trips
   * (pipelining); one for writes (postgres.js counts from the second: 1), so that a write waiting
   * for a row lock holds up at most one other, and only when every connection is busy.
   */
  pipeline: number;
  connectMs: number;
  queryMs: number;
  keepAliveMs: number;
  /** Whether the database is known to be down, shared with the process's other pools. */
  breaker?: Breaker;
}

/**
 * Whether `reason` is the failure of the array-type look-up postgres.js makes on each new
 * connection. postgres.js 3.4.9 drops that look-up's promise (porsager/postgres#1192): when the
 * connection fails during it, the rejection is unhandled and, by Node's default, ends the process.
 * The statement that opened the connection fails on its own terms, so this rejection says nothing new.
 */
export function isTypeLookupFailure(reason: unknown): boolean {
  const query = (reason as { query?: unknown } | null)?.query;
  return typeof query === 'string' && query.includes('pg_catalog.pg_type') && query.includes('typarray');
}

/** Ignores postgres.js's dropped type look-up failures; every other unhandled rejection is thrown, as Node would. */
export function onUnhandledRejection(reason: unknown): void {
  if (!isTypeLookupFailure(reason)) throw reason;
}

let guarded = false;

/** Installs onUnhandledRejection, once per process. */
export function guardRejections(): void {
  if (!guarded) process.on('unhandledRejection', onUnhandledRejection);
  guarded = true;
}

/** A postgres.js instance for a pool; `onclose` is told the id of each connection that closes. */
export function openDriver(options: PoolOptions, onclose: (id: number) => void): postgres.Sql {
  // max_pipeline and onclose are options of postgres.js that its types do not declare.
  return postgres(options.url, {
    max: options.max,
    max_pipeline: options.pipeline,
    connect_timeout: Math.max(1, Math.ceil(options.connectMs / 1000)),
    keep_alive: options.keepAliveMs > 0 ? Math.max(1, Math.round(options.keepAliveMs / 1000)) : null,
    connection: { options: options.settings },
    // Notices are for people at a console; the service has its own log.
    onnotice: () => {},
    onclose,
    // Needed: with fetch_types off, postgres.js 3.4 never hands a new connection to reserve().
    // The array types it fetches are parsed by TYPES' parsers where TYPES has one.
    fetch_types: true,
    types: TYPES,
    transform: { undefined: null },
  } as postgres.Options<Record<string, postgres.PostgresType>>);
}
