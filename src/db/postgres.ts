import { createHash } from 'node:crypto';
import pg from 'pg';
import { Listener } from './listener.js';
import { openPipeline } from './pipeline.js';
import { DatabaseUnavailableError, type Db, type OpenTransaction, type Queryable } from './db.js';
import { withScopes } from './scope.js';
import { parseTimestamptz } from './timestamps.js';

// int8 (count(*), bigint columns) as JavaScript numbers: every value we store fits in 2^53.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.TIMESTAMPTZ, parseTimestamptz);

export interface PostgresOptions {
  url: string;
  /** A schema to put first on the search path (tests give each file its own). */
  schema?: string;
  /** Connections of node-pg's pool, for transactions. */
  poolSize?: number;
  /** Connections that pipeline reads (pipeline.ts); READ_CONNECTIONS by default. */
  readConnections?: number;
  timeouts?: Partial<DbTimeouts>;
}

/** How long the service waits on PostgreSQL (SVC_DB_* settings, README). */
export interface DbTimeouts {
  /** To open a connection, or to get one from a full pool. */
  connectMs: number;
  /** A statement's run on the server (statement_timeout): the server cancels it past this. */
  statementMs: number;
  /** A statement's answer on the client: past it the connection is taken for dead and destroyed. */
  queryMs: number;
  /** TCP keepalive's first probe on an idle connection (0: off). */
  keepAliveMs: number;
}

export const DEFAULT_DB_TIMEOUTS: DbTimeouts = { connectMs: 5_000, statementMs: 5_000, queryMs: 6_000, keepAliveMs: 10_000 };

/** A statement given this long is as good as unbounded (migrations: a query time-out cannot be switched off per query). */
const UNBOUNDED_MS = 24 * 60 * 60 * 1000;

/** A transaction left idle this long is ended by the server, freeing its locks (a process stuck mid-work). */
const IDLE_IN_TRANSACTION_MS = 60_000;

/**
 * Errors that mean the database did not answer, rather than refused a statement: connection
 * failures (SQLSTATE class 08 but 08P01, a protocol violation), the server shutting down or starting (57P01-57P03), too many
 * connections (53300), a statement cancelled by its time-out (57014), and the client's own network
 * errors and time-outs, which carry no SQLSTATE.
 */
function unavailable(error: unknown): unknown {
  const e = error as { code?: string; message?: string };
  const code = e?.code ?? '';
  if (/^[0-9A-Z]{5}$/.test(code)) {
    return (code.startsWith('08') && code !== '08P01') || /^57P0[123]$/.test(code) || code === '53300' || code === '57014' ? new DatabaseUnavailableError(e.message ?? code, error) : error;
  }
  if (code.startsWith('E') || /timeout|terminated|not queryable|connection/i.test(e?.message ?? '')) {
    return new DatabaseUnavailableError(code || e?.message || 'unknown', error);
  }
  return error;
}

/** An error the server answered with (a SQLSTATE) on a connection that still works. */
function refusedByServer(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith('08') && !/^57P0[123]$/.test(code);
}

/**
 * Connections of a process for reads, which each carry many statements at once (pipeline.ts);
 * SVC_DB_READ_CONNECTIONS. On the realistic read benchmark (2 cores) one did best: 5,300 requests/s
 * and a p99 of 20 ms, against 4,300-5,000 and 22-27 ms with two and about 3,300 and 40 ms with
 * eight, which spread the same statements over more server processes to wake.
 */
export const READ_CONNECTIONS = 1;

/**
 * Writes that a lock could hold up: anything but a plain SELECT (or WITH ... SELECT) goes to
 * node-pg's pool, one statement per connection, so that a write waiting for a row lock never holds
 * up the reads queued behind it on a pipelined connection. Plain reads take no row locks and wait
 * for none. A false "write" only costs a read its pipelining; a false "read" still runs correctly.
 */
const WRITES = /\b(INSERT|UPDATE|DELETE|MERGE|TRUNCATE|LOCK|SHARE|CREATE|ALTER|DROP|ANALYZE|VACUUM|REFRESH|pg_advisory_(xact_)?lock(_shared)?)\b/i;
const kinds = new Map<string, boolean>();

export function isPlainRead(sql: string): boolean {
  let read = kinds.get(sql);
  if (read === undefined) {
    read = /^\s*(SELECT|WITH)\b/i.test(sql) && !WRITES.test(sql);
    kinds.set(sql, read);
  }
  return read;
}

const names = new Map<string, string>();

/**
 * Every parameterised statement is sent as a named prepared statement: each connection parses and
 * plans it once and then only binds and executes, which saves the server work on every request.
 */
function prepared(sql: string, params?: unknown[]): pg.QueryConfig {
  if (!params || params.length === 0) return { text: sql };
  let name = names.get(sql);
  if (!name) {
    name = 's' + createHash('sha1').update(sql).digest('hex').slice(0, 20);
    names.set(sql, name);
  }
  return { name, text: sql, values: params };
}

/**
 * node-pg is used only in its callback form, and its query_timeout is replaced by a timer of ours
 * (runStatement). Its promise forms (`pool.connect()`, `client.query()` without a callback) and its
 * query_timeout each left finished statements' rows reachable from dead objects of V8's old
 * generation, which the young-generation collector must take for live: every scavenge copied them,
 * then promoted them, and the old generation grew by about 20 MB/s through a delivery drain until
 * a full collection. With --trace-gc-nvp, through a drain: 2-2.9 MB survived each scavenge (pauses
 * of 4-7 ms) with any one of the three, 0.5-0.8 MB (2-4 ms) without all three; a loop of transactions
 * of one 64-row statement kept 6-12 MB per scavenge against 0.04 MB. docs/performance.md has the
 * effect on deliveries.
 */
function connectTo(pool: pg.Pool): Promise<pg.PoolClient> {
  return new Promise((resolve, reject) => pool.connect((error, client) => (error ? reject(error) : resolve(client!))));
}

/**
 * One statement on a connection of the pool, failed with a read time-out when its answer has not
 * come within `deadlineMs`; the caller then releases the connection as broken. See connectTo.
 */
function runStatement<R extends pg.QueryResultRow>(client: pg.ClientBase, config: pg.QueryConfig, deadlineMs: number): Promise<pg.QueryResult<R>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`query read timeout after ${deadlineMs} ms`)), deadlineMs);
    client.query<R>(config, (error, result) => {
      clearTimeout(timer);
      if (error) reject(error);
      else resolve(result);
    });
  });
}

/**
 * Settings of every connection. A statement of a service answering in milliseconds gains nothing
 * from being compiled to machine code (`jit = off`; a plan's estimate can cross the JIT threshold on
 * a big table and cost about 20 ms per run). Sessions run in UTC, the shape timestamps.ts reads
 * fastest. Plans cached while a table was new are kept fresh by db/statistics.ts, not by planner
 * switches.
 */
const SETTINGS = `-c jit=off -c TimeZone=UTC -c idle_in_transaction_session_timeout=${IDLE_IN_TRANSACTION_MS}`;

/**
 * The connection string with SETTINGS, then PGOPTIONS and the string's own `options`, then the
 * schema's search path, as its `options`: node-pg would let any one of them replace the others, and
 * later settings win, so an operator's own choice outranks ours.
 */
export function withSettings(url: string, schema?: string, statementMs = DEFAULT_DB_TIMEOUTS.statementMs): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  const options = [SETTINGS, `-c statement_timeout=${statementMs}`, process.env.PGOPTIONS, parsed.searchParams.get('options'), schema ? `-c search_path=${schema}` : null];
  parsed.searchParams.set('options', options.filter((o) => o && o.trim()).join(' '));
  return parsed.toString();
}

export async function openPostgres(options: PostgresOptions): Promise<Db> {
  const timeouts = { ...DEFAULT_DB_TIMEOUTS, ...options.timeouts };
  const pool = new pg.Pool({
    connectionString: withSettings(options.url, options.schema, timeouts.statementMs),
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: timeouts.connectMs,
    // No query_timeout: runStatement gives every statement its read time-out.
    keepAlive: timeouts.keepAliveMs > 0,
    keepAliveInitialDelayMillis: timeouts.keepAliveMs,
  });
  // An idle client that loses its connection must not take the process down.
  pool.on('error', () => {});
  const handlers = new Map<string, Set<(payload: string) => void>>();
  const listener = new Listener(options.url, handlers, timeouts);

  const pipeline = openPipeline({
    url: withSettings(options.url, options.schema, timeouts.statementMs),
    connections: options.readConnections ?? READ_CONNECTIONS,
    connectMs: timeouts.connectMs,
    queryMs: timeouts.queryMs,
    keepAliveMs: timeouts.keepAliveMs,
    mapError: unavailable,
  });
  async function query<T>(sql: string, params?: unknown[]): Promise<T[]> {
    if (isPlainRead(sql)) return pipeline.query<T>(sql, params);
    let client: pg.PoolClient;
    try {
      client = await connectTo(pool);
    } catch (error) {
      throw unavailable(error);
    }
    // A connection lost mid-statement emits 'error' on the client as well as failing the statement.
    const onLost = () => {};
    client.on('error', onLost);
    try {
      const result = await runStatement<pg.QueryResultRow>(client, prepared(sql, params), timeouts.queryMs);
      client.removeListener('error', onLost);
      client.release();
      return result.rows as T[];
    } catch (error) {
      client.removeListener('error', onLost);
      // A statement the server refused leaves its connection as good as before; any other failure
      // (a time-out, a lost connection) destroys it.
      client.release(refusedByServer(error) ? undefined : (error as Error));
      throw unavailable(error);
    }
  }

  async function begin(settings: Record<string, string> = {}, unbounded = false): Promise<OpenTransaction> {
    let client: pg.PoolClient;
    try {
      client = await connectTo(pool);
    } catch (error) {
      throw unavailable(error);
    }
    // A connection lost between two statements (a restart, a terminated backend) emits 'error' on
    // the client, which would take the process down with nobody listening; the next statement, or
    // the end, then fails instead, and the connection is destroyed.
    let lost: Error | undefined;
    const onLost = (error: Error) => (lost = error);
    client.on('error', onLost);
    const release = (error?: Error) => {
      client.removeListener('error', onLost);
      client.release(error ?? lost);
    };
    const all = unbounded ? { ...settings, statement_timeout: '0' } : settings;
    const run = <R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>> =>
      runStatement<R>(client, config, unbounded ? UNBOUNDED_MS : timeouts.queryMs);
    try {
      // One round trip: the settings travel with BEGIN as one simple query.
      await run({ text: ['BEGIN', ...Object.entries(all).map(([name, value]) => `SET LOCAL ${name} = ${value}`)].join('; ') });
    } catch (error) {
      release(error as Error);
      throw unavailable(error);
    }
    let ended = false;
    // A connection whose COMMIT or ROLLBACK fails is broken: it is destroyed rather than returned to the pool.
    const end = async (sql: 'COMMIT' | 'ROLLBACK') => {
      if (ended) return;
      ended = true;
      try {
        await run({ text: sql });
        release();
      } catch (error) {
        release(error as Error);
        throw unavailable(error);
      }
    };
    return {
      query: async <R>(sql: string, params?: unknown[]) => {
        try {
          return (await run(prepared(sql, params))).rows as R[];
        } catch (error) {
          throw unavailable(error);
        }
      },
      commit: () => end('COMMIT'),
      rollback: () => end('ROLLBACK'),
    };
  }

  return withScopes({
    engine: 'postgres',
    query,
    begin: (settings) => begin(settings),
    async tx<T>(fn: (q: Queryable) => Promise<T>, txOptions: { unbounded?: boolean } = {}): Promise<T> {
      const transaction = await begin({}, txOptions.unbounded === true);
      try {
        const result = await fn(transaction);
        await transaction.commit();
        return result;
      } catch (error) {
        await transaction.rollback().catch(() => {});
        throw error;
      }
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: pool.options.max }),
    async listen(channel, onNotify) {
      let set = handlers.get(channel);
      if (!set) {
        set = new Set();
        handlers.set(channel, set);
        await listener.listen(channel);
      }
      set.add(onNotify);
      return async () => {
        set!.delete(onNotify);
      };
    },
    async close() {
      await listener.close();
      await Promise.all([pipeline.close(), pool.end()]);
    },
  }, () => begin());
}
