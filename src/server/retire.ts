import type { Config } from '../lib/config.js';
import type { Clock } from '../lib/clock.js';
import type { Db, Queryable } from '../db/db.js';
import { bound, listPartitions, lockRange, PARTITIONED, tryLockRange, type Partition, type TimeRange } from '../db/partitions.js';
import { writeArchive } from './archive.js';
import { compactRange, type Compacted } from './compact.js';

/** What retiring partitions uses of the service. */
export type RetireDeps = { db: Db; clock: Clock; config: Pick<Config, 'archiveDir'> };

export interface Retired {
  /** Ranges dropped (the deliveries partition's name stands for its range in the three tables). */
  dropped: string[];
  /** Ranges past the retention kept for the work they still hold, each with why. */
  kept: { range: string; reason: string }[];
  /** Kept ranges shrunk to that work (compact.ts). */
  compacted: ({ range: string } & Compacted)[];
}

/** Why a range must stay, and whether it may be shrunk to its pending deliveries meanwhile. */
interface Keep {
  reason: string;
  compactable: boolean;
}

/**
 * Why a range past the retention must stay, or null when it may go. Work is never dropped:
 * - a pending delivery in it (it keeps its attempts with it);
 * - a pending delivery anywhere that still sends an event of it (fan-outs are written with their
 *   event, so in practice these are the same range's);
 * - a running bulk recovery whose window reaches into it (it replays the range's deliveries);
 * - a hold until a time (`svc archive restore`).
 * Such a range stays until that work ends and is looked at again at every run. Kept for pending
 * deliveries alone, it is shrunk to them (compact.ts); a recovery or a hold keeps it whole.
 */
async function reasonToKeep(q: Queryable, range: TimeRange, now: Date): Promise<Keep | null> {
  const deliveries = range.parts.find((p) => p.table === 'webhook_deliveries')!;
  const from = range.from === null ? '' : bound('evt', range.from);
  const [row] = await q.query<{ pending: boolean; sent: boolean; recovery: boolean; held: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${deliveries.name} WHERE status = 'pending') AS pending,
            EXISTS (SELECT 1 FROM webhook_deliveries WHERE status = 'pending' AND payload IS NULL AND event_id >= $1 AND event_id < $2) AS sent,
            EXISTS (SELECT 1 FROM webhook_recoveries WHERE status = 'running' AND window_until >= $3 AND window_since < $4) AS recovery,
            EXISTS (SELECT 1 FROM partition_holds WHERE range = $5 AND until > $6) AS held`,
    [from, bound('evt', range.to), new Date(range.from ?? 0), new Date(range.to), range.name, now],
  );
  const compactable = !row.recovery && !row.held;
  if (row.pending) return { reason: 'pending deliveries', compactable };
  if (row.sent) return { reason: 'events of pending deliveries', compactable };
  if (row.recovery) return { reason: 'a running recovery', compactable };
  if (row.held) return { reason: 'restored from an archive', compactable };
  return null;
}

/**
 * The ranges whose end is at or before `cutoff`, oldest first, each with its partition in every table
 * that still has one. A range some of whose partitions are gone was left halfway by a run that
 * stopped (or whose detach timed out) after it had decided and archived the range.
 */
async function rangesBefore(q: Queryable, cutoff: Date): Promise<TimeRange[]> {
  const byTable = await Promise.all(PARTITIONED.map((p) => listPartitions(q, p.table)));
  const ranges = new Map<string, TimeRange>();
  for (const part of byTable.flat()) {
    if (part.to > cutoff.getTime()) continue;
    const key = `${part.from}-${part.to}`;
    const range = ranges.get(key) ?? { name: rangeName(part), from: part.from, to: part.to, parts: [] };
    range.parts.push(part);
    ranges.set(key, range);
  }
  return [...ranges.values()].sort((a, b) => a.to - b.to);
}

/** A range is named by its deliveries partition, whether or not that one is still there. */
function rangeName(part: Partition): string {
  return PARTITIONED[0].table + part.name.slice(part.table.length);
}

/**
 * Retention by partition: every range that ended before `cutoff` and holds no work is written out
 * when SVC_ARCHIVE_DIR is set, detached from its three tables (DETACH ... CONCURRENTLY: reads and
 * writes of the tables go on while it runs) and dropped. No row is deleted one by one.
 *
 * Any number of processes may run it at once: a DETACH that another process did first fails and is
 * passed over; the archive and the drop are done under an advisory lock tried per range, by one
 * process; a detach left halfway (a process stopped during it) is finished by the next run.
 */
export async function retirePartitions(ctx: RetireDeps, cutoff: Date, stopped?: () => boolean): Promise<Retired> {
  const retired: Retired = { dropped: [], kept: [], compacted: [] };
  const now = ctx.clock.now();
  await dropLeftovers(ctx);
  for (const range of await rangesBefore(ctx.db, cutoff)) {
    if (stopped?.()) break;
    // A range left halfway was decided and archived by the run that began it: only its detach is left.
    const begun = range.parts.some((p) => p.detaching) || range.parts.length < PARTITIONED.length;
    if (!begun) {
      const keep = await reasonToKeep(ctx.db, range, now).catch((error: { code?: string }) => {
        // Dropped by another process since the list was read.
        if (error.code === '42P01') return 'gone' as const;
        throw error;
      });
      if (keep === 'gone') continue;
      if (keep !== null) {
        retired.kept.push({ range: range.name, reason: keep.reason });
        const compacted = keep.compactable && ctx.config.archiveDir === null ? await compactRange(ctx.db, range) : null;
        if (compacted) retired.compacted.push({ range: range.name, ...compacted });
        continue;
      }
      // Written while still attached: a failed write leaves the range as it was, for the next run.
      if (ctx.config.archiveDir !== null && !(await archive(ctx, ctx.config.archiveDir, range))) continue;
    }
    // A range another process is detaching is left to it, whole: that one drops it.
    let ours = true;
    for (const part of range.parts) if (ours) ours = await detach(ctx, part);
    if (ours && (await finish(ctx, range))) retired.dropped.push(range.name);
  }
  return retired;
}

/** Writes the range's archive under its advisory lock; false when another process holds it. */
async function archive(ctx: RetireDeps, dir: string, range: TimeRange): Promise<boolean> {
  return ctx.db.tx(
    async (tx) => {
      if (!(await tryLockRange(tx, range.name))) return false;
      await writeArchive(tx, dir, { from: range.from, to: range.to, parts: range.parts });
      return true;
    },
    { unbounded: true },
  ).catch((error: { code?: string }) => {
    if (error.code === '42P01') return false;
    throw error;
  });
}

/**
 * Partitions detached by a run that stopped before dropping them (already archived, since the
 * archive is written before the detach): tables named like partitions that are no partition.
 */
async function dropLeftovers(ctx: RetireDeps): Promise<void> {
  const rows = await ctx.db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
        AND c.relname ~ '^(webhook_deliveries|webhook_delivery_attempts|events)_(p[0-9]{12}|history)$'
        AND NOT EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = c.oid)`,
  );
  for (const { name } of rows) {
    await ctx.db.tx(async (tx) => {
      if (await tryLockRange(tx, name)) await tx.query(`DROP TABLE IF EXISTS ${name}`);
    });
  }
}

/**
 * Detaches one partition: false when another process detached it first or is detaching it, or
 * when the statement time-out cut the detach short (the next run finishes it).
 */
async function detach(ctx: RetireDeps, part: Partition): Promise<boolean> {
  const how = part.detaching ? 'FINALIZE' : 'CONCURRENTLY';
  try {
    await ctx.db.query(`ALTER TABLE ${part.table} DETACH PARTITION ${part.name} ${how}`);
    return true;
  } catch (error) {
    // Another process detached it first (42P01: no longer a partition, or gone), is detaching it
    // (55000: already pending detach), or dropped it: finish() sorts it out.
    const code = (error as { code?: string; original?: { code?: string } }).original?.code ?? (error as { code?: string }).code;
    // 57014: cancelled by the statement time-out, waiting for the table's lock (another process
    // detaching a range) or for older transactions (it stays pending): the next run finishes it.
    if (code === '57014') return false;
    if (code !== '42P01' && code !== '55000' && !(await isDetachRace(ctx.db, part))) throw error;
    return false;
  }
}

async function isDetachRace(q: Queryable, part: Partition): Promise<boolean> {
  const [row] = await q.query<{ attached: boolean; pending: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass($1)) AS attached,
            EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass($1) AND inhdetachpending) AS pending`,
    [part.name],
  );
  return !row.attached || row.pending;
}

/**
 * Drops a detached range in one transaction under the range's advisory lock: false when another
 * process dropped it first or a partition of the range is still attached (being detached).
 */
async function finish(ctx: RetireDeps, range: TimeRange): Promise<boolean> {
  return ctx.db.tx(
    async (tx) => {
      // Waits for a process writing the range's archive, then finds the range gone or drops it.
      await lockRange(tx, range.name);
      const [state] = await tx.query<{ attached: boolean; present: string[] }>(
        `SELECT EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = ANY (SELECT to_regclass(n) FROM unnest($1::text[]) n)) AS attached,
                ARRAY(SELECT n FROM unnest($1::text[]) n WHERE to_regclass(n) IS NOT NULL) AS present`,
        [range.parts.map((p) => p.name)],
      );
      if (state.attached) return false;
      const parts = range.parts.filter((p) => state.present.includes(p.name));
      if (parts.length === 0) return false;
      for (const part of parts) await tx.query(`DROP TABLE ${part.name}`);
      await tx.query('DELETE FROM partition_holds WHERE range = $1', [range.name]);
      return true;
    },
    { unbounded: true },
  );
}
