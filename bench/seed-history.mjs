// A scratch schema of its own for a benchmark run, and finished deliveries in bulk generated in SQL:
// `count` deliveries (each with one attempt, a fifth as many events) of one endpoint, their ids and
// times spread evenly over [fromMs, fromMs + spanMs), in statements of 500,000 rows. For the upgrade
// and retirement benchmarks.
import postgres from 'postgres';
import { openPostgres } from '../dist/db/postgres.js';

export const URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/**
 * A schema of its own on URL for one run: `sql` (no statement time-out) to seed and read, `db` the
 * service's own client; `close()` drops the schema with everything in it.
 */
export async function scratch(prefix) {
  const schema = `${prefix}_${Date.now().toString(36)}`;
  const admin = postgres(URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE SCHEMA ${schema}`);
  const sql = postgres(URL, { max: 2, onnotice: () => {}, connection: { search_path: schema, statement_timeout: 0 } });
  const db = await openPostgres({ url: URL, schema, poolSize: 3 });
  return {
    sql,
    db,
    async close() {
      await db.close();
      await sql.end();
      await admin.unsafe(`DROP SCHEMA ${schema} CASCADE`);
      await admin.end();
    },
  };
}

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
/** An id's 10 time characters (lib/ids.ts), in SQL, from a millisecond expression. */
const idTime = (ms) => Array.from({ length: 10 }, (_, i) => `substr('${ALPHABET}', (${ms} / ${32n ** BigInt(9 - i)} % 32)::int + 1, 1)`).join(' || ');

/** The organization, workspace and endpoint the rows belong to (wsp_1, whe_1). */
export async function seedOwner(sql) {
  await sql.unsafe(`INSERT INTO organizations (id, slug, name, created_at) VALUES ('org_1', 'o', 'O', now());
    INSERT INTO workspaces (id, organization_id, slug, name, created_at) VALUES ('wsp_1', 'org_1', 'w', 'W', now());
    INSERT INTO webhook_endpoints (id, workspace_id, url, subscribed_events, active, secret_enc, created_at, updated_at)
    VALUES ('whe_1', 'wsp_1', 'https://example.com', '{*}', true, 'x', now(), now())`);
}

export async function seedFinished(sql, { count, fromMs, spanMs, tag = '' }) {
  for (let from = 0; from < count; from += 500_000) {
    const to = Math.min(count, from + 500_000);
    await sql.unsafe(`WITH g AS MATERIALIZED (
        SELECT g, (${fromMs} + g * ${spanMs / count})::bigint AS ms FROM generate_series(${from}::bigint, ${to - 1}) g
      ), r AS MATERIALIZED (SELECT g, ms, ${idTime('ms')} AS t, '${tag}' || lpad(to_hex(g), ${16 - tag.length}, '0') AS rnd, timestamptz 'epoch' + ms * interval '1 ms' AS at FROM g
      ), e AS (
        INSERT INTO events (id, workspace_id, type, body, created_at)
        SELECT 'evt_' || t || rnd, 'wsp_1', 'product.created', '{"id":"evt_' || t || rnd || '","data":{"object":{"name":"Item ' || g || '"}}}', at FROM r WHERE g % 5 = 0
      ), d AS (
        INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, attempt, created_at, delivered_at, response_status, response_time_ms, response_body)
        SELECT 'whd_' || t || rnd, 'wsp_1', 'whe_1', 'evt_' || t || '${tag}' || lpad(to_hex(g - g % 5), ${16 - tag.length}, '0'), 'product.created', 'success', 1, at, at, 200, 20, 'ok' FROM r
      )
      INSERT INTO webhook_delivery_attempts (delivery_id, attempt, workspace_id, endpoint_id, started_at, ok, response_status, response_time_ms)
      SELECT 'whd_' || t || rnd, 1, 'wsp_1', 'whe_1', at, true, 200, 20 FROM r`);
  }
}

/**
 * Traffic beside a long operation: a pending delivery inserted and read back by id every 20 ms,
 * each timed. `worst()` is the longest since the last `reset()`, `slow()` how many took over 100 ms.
 */
export function startTraffic(sql, newId) {
  let running = true;
  let worst = 0;
  let slow = 0;
  const done = (async () => {
    while (running) {
      const t0 = performance.now();
      const id = newId('whd');
      await sql`INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, next_attempt_at, created_at)
                VALUES (${id}, 'wsp_1', 'whe_1', 'evt_x', 'product.created', 'pending', now(), now())`;
      await sql`SELECT id FROM webhook_deliveries WHERE id = ${id}`;
      const took = performance.now() - t0;
      worst = Math.max(worst, took);
      if (took > 100) slow++;
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    worst: () => worst,
    slow: () => slow,
    reset: () => ((worst = 0), (slow = 0)),
    stop: async () => ((running = false), await done),
  };
}
