// The upgrade to time partitions on a large database: a schema at the version before partitions,
// DELIVERIES deliveries (as many attempts, a fifth as many events) generated in SQL over 30 days,
// then `migrate` step by step while a writer inserts a delivery every 20 ms and reads one by id.
// Prints each step's time and the longest insert during it: how long traffic waited.
//   node bench/upgrade.mjs [DELIVERIES]   (TEST_DATABASE_URL or postgres://postgres@127.0.0.1:5432/test)
import postgres from 'postgres';
import { migrate, migrationFiles } from '../dist/db/migrate.js';
import { openPostgres } from '../dist/db/postgres.js';
import { newId } from '../dist/lib/ids.js';

const URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const DELIVERIES = Number(process.argv[2] ?? 1_000_000);
const BEFORE = '024_deliveries_workspace_through_endpoint.sql';
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const idTime = (ms) => Array.from({ length: 10 }, (_, i) => `substr('${ALPHABET}', (${ms} / ${32n ** BigInt(9 - i)} % 32)::int + 1, 1)`).join(' || ');

const schema = `upgrade_${Date.now().toString(36)}`;
const admin = postgres(URL, { max: 1, onnotice: () => {} });
await admin.unsafe(`CREATE SCHEMA ${schema}`);
const sql = postgres(URL, { max: 2, onnotice: () => {}, connection: { search_path: schema, statement_timeout: 0 } });
const db = await openPostgres({ url: URL, schema, poolSize: 3 });
try {
  await migrate(db, { through: BEFORE });
  await sql.unsafe(`INSERT INTO organizations (id, slug, name, created_at) VALUES ('org_1', 'o', 'O', now());
    INSERT INTO workspaces (id, organization_id, slug, name, created_at) VALUES ('wsp_1', 'org_1', 'w', 'W', now());
    INSERT INTO webhook_endpoints (id, workspace_id, url, subscribed_events, active, secret_enc, created_at, updated_at)
    VALUES ('whe_1', 'wsp_1', 'https://example.com', '{*}', true, 'x', now(), now())`);
  const started = performance.now();
  const span = 30 * 86_400_000;
  const end = Date.now() - 60_000;
  for (let from = 0; from < DELIVERIES; from += 500_000) {
    const to = Math.min(DELIVERIES, from + 500_000);
    await sql.unsafe(`WITH g AS MATERIALIZED (
        SELECT g, (${end} - ${span} + g * ${span / DELIVERIES})::bigint AS ms FROM generate_series(${from}::bigint, ${to - 1}) g
      ), r AS MATERIALIZED (SELECT g, ms, ${idTime('ms')} AS t, lpad(to_hex(g), 16, '0') AS rnd, timestamptz 'epoch' + ms * interval '1 ms' AS at FROM g
      ), e AS (
        INSERT INTO events (id, workspace_id, type, body, created_at)
        SELECT 'evt_' || t || rnd, 'wsp_1', 'product.created', '{"id":"evt_' || t || rnd || '","data":{"object":{"name":"Item ' || g || '"}}}', at FROM r WHERE g % 5 = 0
      ), d AS (
        INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, attempt, created_at, delivered_at, response_status, response_time_ms, response_body)
        SELECT 'whd_' || t || rnd, 'wsp_1', 'whe_1', 'evt_' || t || lpad(to_hex(g - g % 5), 16, '0'), 'product.created', 'success', 1, at, at, 200, 20, 'ok' FROM r
      )
      INSERT INTO webhook_delivery_attempts (delivery_id, attempt, workspace_id, endpoint_id, started_at, ok, response_status, response_time_ms)
      SELECT 'whd_' || t || rnd, 1, 'wsp_1', 'whe_1', at, true, 200, 20 FROM r`);
  }
  for (const table of ['events', 'webhook_deliveries', 'webhook_delivery_attempts']) await sql.unsafe(`VACUUM ANALYZE ${table}`);
  const [{ size }] = await sql`SELECT pg_size_pretty(pg_total_relation_size('webhook_deliveries') + pg_total_relation_size('webhook_delivery_attempts') + pg_total_relation_size('events')) AS size`;
  console.log(`seeded ${DELIVERIES} deliveries, ${DELIVERIES} attempts, ${DELIVERIES / 5} events (${size}) in ${((performance.now() - started) / 1000).toFixed(0)} s`);

  // Traffic during the upgrade: an insert and a read by id every 20 ms, each timed.
  let running = true;
  let worst = 0;
  const traffic = (async () => {
    while (running) {
      const t0 = performance.now();
      const id = newId('whd');
      await sql`INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, next_attempt_at, created_at)
                VALUES (${id}, 'wsp_1', 'whe_1', 'evt_x', 'product.created', 'pending', now(), now())`;
      await sql`SELECT id FROM webhook_deliveries WHERE id = ${id}`;
      worst = Math.max(worst, performance.now() - t0);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  for (const file of migrationFiles().filter((f) => f > BEFORE)) {
    worst = 0;
    const t0 = performance.now();
    await migrate(db, { through: file });
    console.log(`${file}: ${((performance.now() - t0) / 1000).toFixed(2)} s, longest insert + read during it ${worst.toFixed(0)} ms`);
  }
  running = false;
  await traffic;
} finally {
  await db.close();
  await sql.end();
  await admin.unsafe(`DROP SCHEMA ${schema} CASCADE`);
  await admin.end();
}
