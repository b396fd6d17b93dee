// Retiring DELIVERIES finished deliveries (as many attempts, a fifth as many events) past the
// retention, two ways, on one schema of today's version while a writer inserts a delivery every
// 20 ms and reads it back:
//   - row by row: the rows in the history partition, deleted by retention's batches of 1,000 (what
//     every table went through before partitions; here without the pause between batches);
//   - by partition: the same rows in a day partition of their own, detached and dropped.
// Prints each way's time, write-ahead log and the traffic's longest insert + read.
//   node bench/retire.mjs [DELIVERIES]   (TEST_DATABASE_URL or postgres://postgres@127.0.0.1:5432/test)
import { migrate } from '../dist/db/migrate.js';
import { ensurePartitions } from '../dist/db/partitions.js';
import { ManualClock } from '../dist/lib/clock.js';
import { newId } from '../dist/lib/ids.js';
import { runRetention } from '../dist/server/retention.js';
import { scratch, seedFinished, seedOwner, startTraffic } from './seed-history.mjs';

const DELIVERIES = Number(process.argv[2] ?? 1_000_000);
const DAY = 86_400_000;

const { sql, db, close } = await scratch('retire');

/** Runs retention at `now` (30 days kept, no pause between batches) and prints what it cost. */
async function retire(way, now, traffic) {
  const [{ lsn }] = await sql`SELECT pg_current_wal_lsn()::text AS lsn`;
  traffic.reset();
  const t0 = performance.now();
  const run = await runRetention(
    { db, clock: new ManualClock(now), config: { retentionMs: 30 * DAY, archiveDir: null, partitionWidthMs: DAY }, metrics: { retentionDeleted: () => {} } },
    { pauseMs: 0 },
  );
  const seconds = (performance.now() - t0) / 1000;
  const [{ wal }] = await sql`SELECT pg_size_pretty(pg_wal_lsn_diff(pg_current_wal_lsn(), ${lsn}::pg_lsn)) AS wal`;
  const rows = Object.values(run.deleted).reduce((a, b) => a + b, 0);
  console.log(`${way}: ${seconds.toFixed(2)} s, WAL ${wal}, ${rows} rows deleted one by one, ${run.retired?.dropped.length ?? 0} partitions dropped; longest insert + read during it ${traffic.worst().toFixed(0)} ms, ${traffic.slow()} over 100 ms`);
}

try {
  await migrate(db);
  await seedOwner(sql);
  const now = Date.now();
  const traffic = startTraffic(sql, newId);

  // Row by row: 40 days old, in the history partition.
  let t0 = performance.now();
  await seedFinished(sql, { count: DELIVERIES, fromMs: now - 41 * DAY, spanMs: DAY, tag: 'a' });
  await sql.unsafe('VACUUM ANALYZE webhook_deliveries_history, webhook_delivery_attempts_history, events_history');
  console.log(`seeded ${DELIVERIES} deliveries in the history partition in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  await retire('row by row (DELETE in batches of 1,000)', now, traffic);

  // By partition: a day of its own, made ahead past the history partition's end (a day after migrating).
  const day = Math.floor((now + 2 * DAY) / DAY) * DAY;
  await ensurePartitions(db, new Date(day), DAY);
  t0 = performance.now();
  await seedFinished(sql, { count: DELIVERIES, fromMs: day, spanMs: DAY, tag: 'b' });
  await sql.unsafe('VACUUM ANALYZE webhook_deliveries, webhook_delivery_attempts, events');
  console.log(`seeded ${DELIVERIES} deliveries in a day partition in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  await retire('by partition (DETACH CONCURRENTLY, DROP)', day + 31 * DAY + DAY, traffic);
  await traffic.stop();
} finally {
  await close();
}
