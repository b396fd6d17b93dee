import postgres from 'postgres';
// pg's own conversion of a JavaScript value to a statement parameter (Dates, arrays, objects, Buffers).
import pgUtils from 'pg/lib/utils.js';
import pg from 'pg';

/**
 * Plain reads outside transactions (every API read; postgres.ts, isPlainRead) go through
 * postgres.js, which pipelines: statements issued while a connection is busy are written behind
 * the ones in flight, and statements issued in the same tick leave in one write. node-pg sends a
 * connection's next statement only after the last one's answer, so every statement costs its own
 * round trip and its own wake-up of a server process. On the realistic read benchmark (many
 * credentials and workspaces, 50 connections, 2 cores) one pipelined connection more than doubled
 * the rate and halved the p99 (docs/performance.md). Writes, transactions, held claims and LISTEN
 * stay on node-pg.
 *
 * Values travel exactly as node-pg sends them: each parameter is converted by pg's own
 * prepareValue to text (or a Buffer) first, and the serialisers below pass text through, so a
 * statement means the same on either driver. Results are parsed by node-pg's parsers (PG_TYPES).
 */
export interface Pipeline {
  query<T>(sql: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

export interface PipelineOptions {
  /** The connection string; `options` in it (settings, search path) are sent at connection start. */
  url: string;
  connections: number;
  connectMs: number;
  /** An answer slower than this fails the statement and replaces every connection (taken for dead). */
  queryMs: number;
  keepAliveMs: number;
  /** Maps a driver error to the service's (DatabaseUnavailableError for a database that did not answer). */
  mapError: (error: unknown) => unknown;
}

/** A parameter as text: prepareValue made every value text but Buffers, which bytea takes in hex. */
const text = (x: unknown) => (typeof x === 'string' ? x : Buffer.isBuffer(x) ? `\\x${x.toString('hex')}` : String(x));
const parserOf = pg.types.getTypeParser as (oid: number, format: 'text') => (value: string) => unknown;
const unparsed = parserOf(0, 'text');

/**
 * Every type node-pg parses (with this process's overrides: int8 as a number, timestamptz by
 * parseTimestamptz, set in postgres.ts), parsed by node-pg's own parser; parameters of any type
 * pass through as the text prepareValue made of them.
 */
const PG_TYPES = Object.fromEntries(
  Array.from({ length: 10_000 }, (_, oid) => oid)
    .filter((oid) => parserOf(oid, 'text') !== unparsed)
    .map((oid) => [`oid${oid}`, { to: oid, from: [oid], serialize: text, parse: (x: string) => parserOf(oid, 'text')(x) }]),
);

function connect(options: PipelineOptions) {
  const url = new URL(options.url);
  const settings = url.searchParams.get('options');
  url.searchParams.delete('options');
  return postgres(url.toString(), {
    max: options.connections,
    prepare: true,
    connect_timeout: Math.max(1, Math.ceil(options.connectMs / 1000)),
    keep_alive: options.keepAliveMs > 0 ? Math.max(1, Math.round(options.keepAliveMs / 1000)) : null,
    // node-pg drops notices; so do we (postgres.js would print them).
    onnotice: () => {},
    connection: settings ? { options: settings } : {},
    transform: { undefined: null },
    // Arrays are parsed by node-pg's parsers too (postgres.js reads a NULL element as the text "NULL").
    fetch_types: false,
    types: PG_TYPES,
  });
}

/** A server error with the field names node-pg gives (`constraint`, `table`, ...), which callers read. */
function likeNodePg(error: unknown): unknown {
  const e = error as Record<string, unknown> | null;
  if (e && typeof e === 'object' && e.name === 'PostgresError') {
    e.constraint ??= e.constraint_name;
    e.table ??= e.table_name;
    e.column ??= e.column_name;
    e.schema ??= e.schema_name;
    e.dataType ??= e.data_type_name;
  }
  return error;
}

export function openPipeline(options: PipelineOptions): Pipeline {
  let sql = connect(options);

  /** A statement unanswered past queryMs: its connection is silent, so every connection is replaced. */
  function replace(stale: typeof sql): void {
    if (sql !== stale) return;
    sql = connect(options);
    stale.end({ timeout: 0 }).catch(() => {});
  }

  return {
    async query<T>(statement: string, params?: unknown[]): Promise<T[]> {
      const current = sql;
      const values = params ? params.map((p) => pgUtils.prepareValue(p)) : [];
      const pending = current.unsafe(statement, values as postgres.ParameterOrJSON<never>[], { prepare: values.length > 0 });
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          replace(current);
          reject(new Error(`query read timeout after ${options.queryMs} ms`));
        }, options.queryMs);
      });
      try {
        return (await Promise.race([pending, timeout])) as unknown as T[];
      } catch (error) {
        pending.catch(() => {});
        throw options.mapError(likeNodePg(error));
      } finally {
        clearTimeout(timer);
      }
    },
    async close() {
      await sql.end({ timeout: 5 });
    },
  };
}
