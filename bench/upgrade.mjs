// The upgrade to time partitions on a large database: a schema at the version before partitions,
// DELIVERIES deliveries (as many attempts, a fifth as many events) generated in SQL over 30 days,
// then `migrate` step by step while a writer inserts a delivery every 20 ms and reads one by id.
// Prints each step's time and the longest insert during it: how long traffic waited.
//   node bench/upgrade.mjs [DELIVERIES]   (TEST_DATABASE_URL or postgres://postgres@127.0.0.1:5432/test)
import { migrate, migrationFiles } from '../dist/db/migrate.js';
import { newId } from '../dist/lib/ids.js';
import { scratch, seedFinished, seedOwner, startTraffic } from './seed-history.mjs';

const DELIVERIES = Number(process.argv[2] ?? 1_000_000);
const BEFORE = '024_deliveries_workspace_through_endpoint.sql';

const { sql, db, close } = await scratch('upgrade');
try {
  await migrate(db, { through: BEFORE });
  await seedOwner(sql);
  const started = performance.now();
  const span = 30 * 86_400_000;
  await seedFinished(sql, { count: DELIVERIES, fromMs: Date.now() - 60_000 - span, spanMs: span });
  for (const table of ['events', 'webhook_deliveries', 'webhook_delivery_attempts']) await sql.unsafe(`VACUUM ANALYZE ${table}`);
  const [{ size }] = await sql`SELECT pg_size_pretty(pg_total_relation_size('webhook_deliveries') + pg_total_relation_size('webhook_delivery_attempts') + pg_total_relation_size('events')) AS size`;
  console.log(`seeded ${DELIVERIES} deliveries, ${DELIVERIES} attempts, ${DELIVERIES / 5} events (${size}) in ${((performance.now() - started) / 1000).toFixed(0)} s`);

  // Traffic during the upgrade: an insert and a read by id every 20 ms, each timed.
  const traffic = startTraffic(sql, newId);
  for (const file of migrationFiles().filter((f) => f > BEFORE)) {
    traffic.reset();
    const t0 = performance.now();
    await migrate(db, { through: file });
    console.log(`${file}: ${((performance.now() - t0) / 1000).toFixed(2)} s, longest insert + read during it ${traffic.worst().toFixed(0)} ms`);
  }
  await traffic.stop();
} finally {
  await close();
}
