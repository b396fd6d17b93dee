import { Breaker } from './breaker.js';
import { type Db, type OpenTransaction, type Queryable } from './db.js';
import { Listener } from './listener.js';
import { Pool } from './pool.js';
import { withScopes } from './scope.js';
import { toText } from './types.js';

export interface PostgresOptions {
  url: string;
  /** A schema to put first on the search path (tests give each file its own). */
  schema?: string;
  /** Connections for writes and transactions. */
  poolSize?: number;
  /** Connections that pipeline plain reads; READ_CONNECTIONS by default. */
  readConnections?: number;
  timeouts?: Partial<DbTimeouts>;
}

/** How long the service waits on PostgreSQL (SVC_DB_* settings, README). */
export interface DbTimeouts {
  /** To open a connection (a statement or a transaction waits for a busy pool up to queryMs). */
  connectMs: number;
  /** A statement's run on the server (statement_timeout): the server cancels it past this. */
  statementMs: number;
  /** A statement's answer on the client: past it the connections are taken for dead and replaced. */
  queryMs: number;
  /** TCP keepalive's first probe on an idle connection (0: off). */
  keepAliveMs: number;
}

export const DEFAULT_DB_TIMEOUTS: DbTimeouts = { connectMs: 5_000, statementMs: 5_000, queryMs: 6_000, keepAliveMs: 10_000 };

/** A statement given this long is as good as unbounded (migrations). */
const UNBOUNDED_MS = 24 * 60 * 60 * 1000;

/** A transaction left idle this long is ended by the server, freeing its locks (a process stuck mid-work). */
const IDLE_IN_TRANSACTION_MS = 60_000;

/**
 * Connections that pipeline reads (SVC_DB_READ_CONNECTIONS): one did best on the realistic read
 * benchmark, since more spread the same statements over more server processes to wake
 * (docs/performance.md).
 */
export const READ_CONNECTIONS = 1;

/**
 * Writes that a lock could hold up: anything but a plain SELECT (or WITH ... SELECT) goes to the
 * write connections (pool.ts), so that a write waiting for a row lock never holds up the reads
 * pipelined behind it. A false "write" only costs a read its pipelining.
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

/**
 * Settings of every connection: no JIT (a statement answering in milliseconds gains nothing from
 * being compiled, and an estimate crossing the threshold on a big table costs about 20 ms), UTC
 * (the shape timestamps.ts reads), the time-outs; then PGOPTIONS and the URL's own `options`, so
 * that an operator's choice wins; then the schema.
 */
export function connectionSettings(url: URL, schema: string | undefined, statementMs: number): string {
  return [
    `-c jit=off -c TimeZone=UTC -c idle_in_transaction_session_timeout=${IDLE_IN_TRANSACTION_MS} -c statement_timeout=${statementMs}`,
    process.env.PGOPTIONS,
    url.searchParams.get('options'),
    schema ? `-c search_path=${schema}` : null,
  ]
    .filter((o) => o && o.trim())
    .join(' ');
}

const values = (params?: unknown[]) => (params ? params.map(toText) : []);

export async function openPostgres(options: PostgresOptions): Promise<Db> {
  const timeouts = { ...DEFAULT_DB_TIMEOUTS, ...options.timeouts };
  const url = new URL(options.url);
  const settings = connectionSettings(url, options.schema, timeouts.statementMs);
  url.searchParams.delete('options');
  const common = { url: url.toString(), settings, connectMs: timeouts.connectMs, queryMs: timeouts.queryMs, keepAliveMs: timeouts.keepAliveMs };
  // Reads and writes learn together that the database is down.
  const breaker = new Breaker();
  const reads = new Pool({ ...common, max: options.readConnections ?? READ_CONNECTIONS, pipeline: 100, breaker });
  const writes = new Pool({ ...common, max: options.poolSize ?? 10, pipeline: 1, breaker });
  const listener = new Listener(common);

  async function begin(settings: Record<string, string> = {}, unbounded = false): Promise<OpenTransaction> {
    const deadline = unbounded ? UNBOUNDED_MS : timeouts.queryMs;
    const all = unbounded ? { ...settings, statement_timeout: '0' } : settings;
    // One round trip: the settings travel with BEGIN as one simple query.
    const connection = await writes.reserve(['BEGIN', ...Object.entries(all).map(([name, value]) => `SET LOCAL ${name} = ${value}`)].join('; '), deadline);
    let ended = false;
    const end = async (sql: 'COMMIT' | 'ROLLBACK') => {
      if (ended) return;
      ended = true;
      try {
        await connection.query(sql, [], deadline);
      } finally {
        connection.release();
      }
    };
    return {
      query: <R>(sql: string, params?: unknown[]) => connection.query<R>(sql, values(params), deadline),
      commit: () => end('COMMIT'),
      rollback: () => end('ROLLBACK'),
    };
  }

  return withScopes(
    {
      query: <T>(sql: string, params?: unknown[]) => (isPlainRead(sql) ? reads : writes).query<T>(sql, values(params)),
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
      async session<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
        const connection = await writes.reserve('SET statement_timeout = 0', UNBOUNDED_MS);
        try {
          return await fn({ query: <R>(sql: string, params?: unknown[]) => connection.query<R>(sql, values(params), UNBOUNDED_MS) });
        } finally {
          // Back to the connection's own time-out before the pool hands it to anyone else.
          await connection.query('RESET statement_timeout', [], timeouts.queryMs).catch(() => {});
          connection.release();
        }
      },
      poolStats: () => {
        const { busy, waiting, max } = writes.stats();
        return { total: max, idle: max - busy, waiting, max };
      },
      onAvailability: (fn) => breaker.onChange(fn),
      refusedStatements: () => breaker.refused,
      listen: (channel, onNotify) => listener.listen(channel, onNotify),
      async close() {
        await listener.close();
        await Promise.all([reads.close(), writes.close()]);
      },
    },
    () => begin(),
  );
}
