import { idTime, idTimePrefix, type IdPrefix } from '../lib/ids.js';
import type { Db, Queryable } from './db.js';

/**
 * The tables partitioned by time (migrations/026-028): each by range of an id that begins with its
 * creation time (lib/ids.ts), so the primary key stays the id and a look-up by id reaches one
 * partition. The attempts are cut by their delivery's id, on the same bounds as the deliveries: a
 * delivery and its attempts always share a time range, and retire together.
 */
export const PARTITIONED: readonly { table: string; key: string; prefix: IdPrefix }[] = [
  { table: 'webhook_deliveries', key: 'id', prefix: 'whd' },
  { table: 'webhook_delivery_attempts', key: 'delivery_id', prefix: 'whd' },
  { table: 'events', key: 'id', prefix: 'evt' },
];

/** Partitions are made this many widths ahead of now, so a missed run or two changes nothing. */
export const AHEAD = 3;
/** A clock that jumped further than this many widths past the last partition gets one partition for the gap. */
const GAP = 2;
/** DDL here waits this long for a lock at most, then gives up until the next run (it never queues traffic behind it for long). */
const LOCK_TIMEOUT = '2s';
/** One process at a time makes partitions for a schema; the others skip that run. */
const LOCK_KEY = 0x5041_5254; // 'PART'

/** One process at a time archives, drops or compacts a time range (server/retire.ts, compact.ts). */
const RANGE_LOCK = 0x5245_5449; // 'RETI'

/** Takes the range's lock for the transaction; false when another process holds it. */
export async function tryLockRange(tx: Queryable, name: string): Promise<boolean> {
  const [{ locked }] = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1, hashtext(current_schema() || $2)) AS locked', [RANGE_LOCK, name]);
  return locked;
}

/** Takes the range's lock for the transaction, waiting for the process that holds it. */
export async function lockRange(tx: Queryable, name: string): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock($1, hashtext(current_schema() || $2))', [RANGE_LOCK, name]);
}

export interface Partition {
  table: string;
  name: string;
  /** The first millisecond of its range; null for the history's MINVALUE. */
  from: number | null;
  /** The first millisecond after its range. */
  to: number;
  /** Detached CONCURRENTLY by a run that did not finish (it is no longer read, and is finished by the next run). */
  detaching: boolean;
}

/** A time range and its partition in each partitioned table that has one (retention, compaction). */
export interface TimeRange {
  /** Named by its deliveries partition, whether or not that one is still there. */
  name: string;
  from: number | null;
  to: number;
  parts: Partition[];
}

/** The partitions of `table` (in the current schema), oldest first. */
export async function listPartitions(q: Queryable, table: string): Promise<Partition[]> {
  const rows = await q.query<{ name: string; bound: string; detaching: boolean }>(
    `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound, i.inhdetachpending AS detaching
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = to_regclass($1)`,
    [table],
  );
  return rows
    .map((r) => {
      const [, from, to] = /FROM \((?:MINVALUE|'([^']+)')\) TO \('([^']+)'\)/.exec(r.bound) ?? [];
      return { table, name: r.name, from: from === undefined ? null : idTime(from), to: idTime(to), detaching: r.detaching };
    })
    .sort((a, b) => a.to - b.to);
}

/** A partition's name: its table and the UTC minute its range starts at (`events_p202611281930`). */
export function partitionName(table: string, from: number): string {
  return `${table}_p${new Date(from).toISOString().slice(0, 16).replace(/[-T:]/g, '')}`;
}

/** The bound of a range as the table's key holds it. */
export function bound(prefix: IdPrefix, ms: number): string {
  return idTimePrefix(prefix, new Date(ms));
}

/** The ranges to add after `top` so that partitions cover up to AHEAD widths past `now`. */
export function rangesAhead(top: number, now: number, width: number): [number, number][] {
  const floor = Math.floor(now / width) * width;
  const target = floor + AHEAD * width;
  const ranges: [number, number][] = [];
  let start = top;
  if (start < floor - GAP * width) {
    ranges.push([start, floor]);
    start = floor;
  }
  while (start < target) {
    const end = (Math.floor(start / width) + 1) * width;
    ranges.push([start, end]);
    start = end;
  }
  return ranges;
}

/**
 * Makes the partitions of every partitioned table up to AHEAD widths past `now`: run at start and
 * then periodically by `svc serve` and `svc worker` (startPartitions). One process at a time per
 * schema (an advisory lock, tried: a process that finds it taken leaves the run to the holder).
 * Each partition is made as a table of its own, then attached: ATTACH takes a SHARE UPDATE
 * EXCLUSIVE lock on the parent, which reads and writes pass, where CREATE ... PARTITION OF would
 * take an ACCESS EXCLUSIVE one. Returns the partitions made.
 */
export async function ensurePartitions(db: Db, now: Date, widthMs: number): Promise<string[]> {
  return db.tx(async (tx) => {
    const [{ locked }] = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1, hashtext(current_schema())) AS locked', [LOCK_KEY]);
    if (!locked) return [];
    await tx.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
    const made: string[] = [];
    for (const { table, prefix } of PARTITIONED) {
      const partitions = await listPartitions(tx, table);
      const top = Math.max(...partitions.map((p) => p.to));
      for (const [from, to] of rangesAhead(top, now.getTime(), widthMs)) {
        const name = partitionName(table, from);
        await tx.query(`CREATE TABLE ${name} (LIKE ${table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
        await tx.query(`ALTER TABLE ${table} ATTACH PARTITION ${name} FOR VALUES FROM ('${bound(prefix, from)}') TO ('${bound(prefix, to)}')`);
        made.push(name);
      }
    }
    return made;
  });
}

/** How often a process checks that partitions are made ahead: a quarter of a width, between 10 s and 15 minutes. */
export function partitionCheckMs(widthMs: number): number {
  return Math.min(15 * 60_000, Math.max(10_000, Math.floor(widthMs / 4)));
}
