import type { Db, Queryable } from '../db/db.js';
import { bound, tryLockRange, type Partition, type TimeRange } from '../db/partitions.js';

/**
 * A range is compacted when the rows it must keep are at most this share of its deliveries. A
 * compacted range holds only kept rows, so it is compacted again only once three quarters of those
 * have ended: each range is rewritten a few times at most, smaller each time.
 */
const SHARE = 0.25;
/** Fewer deliveries than this gone from a range are not worth a rewrite. */
const LEAST = 1000;
/**
 * How long the lock on the range's partitions is waited for: a little more than a delivery hold
 * keeps its locks (HOLD_MS), since every claim locks every partition. Tried this often at most.
 */
const LOCK_TIMEOUT = '600ms';
const TRIES = 3;
const TRY_PAUSE_MS = 1000;

export interface Compacted {
  /** Deliveries the range held (the table's estimate) and holds now. */
  before: number;
  after: number;
  /** Attempts and events it holds now. */
  attempts: number;
  events: number;
}

/**
 * Shrinks a range kept past the retention to the work it still holds: its pending deliveries with
 * their attempts, and the events that pending deliveries still send. Everything else in the range
 * has ended and is past the retention, as it would be were the range dropped. The rows kept stay in
 * their partitions with their ids (a delivery's id is the webhook-id its receiver sees), so a
 * look-up by id still reaches one partition, and the range goes whole once that work ends.
 *
 * One transaction: the range's three partitions are locked (ACCESS EXCLUSIVE, on the partitions
 * only: the tables' other partitions are read and written meanwhile), the rows kept are copied
 * aside, the partitions truncated and the rows written back. No row is deleted one by one, the
 * write-ahead log holds the rows kept only, and the disk space of the rest comes back at commit.
 * Every claim reads every partition, so the lock waits for the delivery holds open at the time
 * (half a second at most) while new statements on the range queue behind it: a pause of that
 * length, once per rewrite. A lock not had within LOCK_TIMEOUT (a transaction holding a row of the
 * range) is given up and tried again later, so nothing waits longer. Returns null when the range
 * is not worth it or could not be locked.
 *
 * Not done while archives are written (SVC_ARCHIVE_DIR): an archive holds a whole range, written
 * once when the range is dropped.
 */
export async function compactRange(db: Db, range: TimeRange): Promise<Compacted | null> {
  if ((await worth(db, range)) === null) return null;
  for (let tried = 1; ; tried++) {
    const compacted = await db.tx((q) => rewrite(q, range), { unbounded: true }).catch((error: { code?: string }) => {
      // 55P03: the lock was not had in time (40P01: nor without a deadlock); 42P01: dropped by
      // another process meanwhile.
      if (error.code === '40P01') return '55P03';
      if (error.code === '55P03' || error.code === '42P01') return error.code;
      throw error;
    });
    if (compacted !== '55P03') return compacted === '42P01' ? null : compacted;
    if (tried === TRIES) return null;
    await new Promise((resolve) => setTimeout(resolve, TRY_PAUSE_MS));
  }
}

/**
 * The range's deliveries (the table's estimate) when few enough are pending to compact it, else
 * null. A partition never analyzed is analyzed first (a sample, not a count of every row).
 */
async function worth(q: Queryable, range: TimeRange): Promise<number | null> {
  const { name } = part(range, 'webhook_deliveries');
  const read = () =>
    q.query<{ total: number; pending: number }>(
      `SELECT c.reltuples::bigint::int AS total, (SELECT count(*)::int FROM ${name} WHERE status = 'pending') AS pending
         FROM pg_class c WHERE c.oid = $1::regclass`,
      [name],
    );
  let [count] = await read();
  if (count.total < 0) {
    await q.query(`ANALYZE ${name}`);
    [count] = await read();
  }
  return count.pending > count.total * SHARE || count.total - count.pending < LEAST ? null : count.total;
}

function part(range: TimeRange, table: string): Partition {
  return range.parts.find((p) => p.table === table)!;
}

async function rewrite(q: Queryable, range: TimeRange): Promise<Compacted | null> {
  const [deliveries, attempts, events] = ['webhook_deliveries', 'webhook_delivery_attempts', 'events'].map((t) => part(range, t).name);
  // One process at a time: two that both read the tables, then both asked for the partitions'
  // lock, would each wait for the other.
  if (!(await tryLockRange(q, range.name))) return null;
  const from = range.from === null ? '' : bound('evt', range.from);
  // The events that pending deliveries anywhere still send (a delivery without a body of its own
  // sends its event's; fan-outs are written with their event, so in practice in this range). Read
  // before the lock, through the pending deliveries' index: the list can only shrink meanwhile.
  await q.query(
    `CREATE TEMPORARY TABLE compact_sent ON COMMIT DROP AS
       SELECT DISTINCT event_id FROM webhook_deliveries WHERE status = 'pending' AND event_id >= '${from}' AND event_id < '${bound('evt', range.to)}'`,
  );
  await q.query('ANALYZE compact_sent');
  await q.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
  await q.query(`LOCK TABLE ${deliveries}, ${attempts}, ${events} IN ACCESS EXCLUSIVE MODE`);
  // Looked at again under the lock: another process may have compacted it meanwhile.
  const before = await worth(q, range);
  if (before === null) return null;
  // Each read goes through an index (pending deliveries, the attempts' and events' keys): the lock
  // is held for the length of the rows kept, not of the range.
  const keep: [table: string, select: string][] = [
    [deliveries, `SELECT * FROM ${deliveries} WHERE status = 'pending'`],
    [attempts, `SELECT a.* FROM ${attempts} a JOIN ${deliveries} d ON d.id = a.delivery_id WHERE d.status = 'pending'`],
    [events, `SELECT e.* FROM ${events} e JOIN compact_sent s ON s.event_id = e.id`],
  ];
  for (const [table, select] of keep) await q.query(`CREATE TEMPORARY TABLE compact_${table} ON COMMIT DROP AS ${select}`);
  await q.query(`TRUNCATE ${deliveries}, ${attempts}, ${events}`);
  const written: number[] = [];
  for (const [table] of keep) {
    const [{ rows }] = await q.query<{ rows: number }>(
      `WITH written AS (INSERT INTO ${table} SELECT * FROM compact_${table} RETURNING 1) SELECT count(*)::int AS rows FROM written`,
    );
    written.push(rows);
    // Its row estimate is what the next run compares the pending deliveries with.
    await q.query(`ANALYZE ${table}`);
  }
  return { before, after: written[0], attempts: written[1], events: written[2] };
}
