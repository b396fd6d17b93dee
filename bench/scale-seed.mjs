// The scale scenario's data (bench/scale.mjs): workspaces with endpoints, and events, deliveries and
// attempts generated in SQL, a batch per statement, in the service's own id shapes (time first, as
// idTimePrefix makes them), spread over the last 30 days as retention leaves a table.
import { createWorkspace } from '../dist/account/admin.js';
import { createApiKey } from '../dist/api-keys/store.js';
import { SecretBox } from '../dist/lib/secretbox.js';
import { createEndpoint } from '../dist/webhooks/endpoints/store.js';
import { MASTER_KEY } from './service.mjs';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const DAY_MS = 24 * 60 * 60_000;
export const DAYS = 30;
/** Each event goes to this many of its workspace's endpoints. */
export const FAN_OUT = 5;
/** The newest events' deliveries are pending and due: a few hundred rows for the claim to find. */
const PENDING_EVENTS = 60;
/** Events per statement (FAN_OUT deliveries and twice as many attempts each). */
const BATCH_EVENTS = 200_000;
const TYPES = [
  ['product.created', 'product', 'prd'],
  ['product.updated', 'product', 'prd'],
  ['order.created', 'order', 'ord'],
  ['order.paid', 'order', 'ord'],
];

/** idTimePrefix's 10 time characters in SQL, for `ms` (a bigint column of milliseconds). */
function idTime(ms) {
  return Array.from({ length: 10 }, (_, i) => `substr('${ALPHABET}', (${ms} / ${32n ** BigInt(9 - i)} % 32)::int + 1, 1)`).join(' || ');
}

/** `workspaces` workspaces of `endpoints` endpoints each, an API key per workspace. */
export async function seedTenants(db, organizationId, tag, workspaces, endpoints) {
  const box = new SecretBox(Buffer.from(MASTER_KEY, 'hex'));
  const now = new Date();
  const out = [];
  for (let w = 0; w < workspaces; w++) {
    const ws = await createWorkspace(db, { organizationId, slug: `${tag}-${w}`, name: `Scale ${tag} ${w}` }, now);
    const { key } = await createApiKey(db, { workspaceId: ws.id, name: 'Scale key', test: false }, now);
    const endpointIds = [];
    for (let e = 0; e < endpoints; e++) {
      const { row } = await createEndpoint(db, box, { workspaceId: ws.id, url: `http://127.0.0.1:9/${tag}/${w}/${e}`, subscribedEvents: ['*'] }, now);
      endpointIds.push(row.id);
    }
    out.push({ id: ws.id, apiKey: key, endpointIds });
  }
  return out;
}

/**
 * One statement: events [from, to) of a group of `total` events, `step` ms apart ending now, each
 * with FAN_OUT deliveries (to alternate halves of its workspace's endpoints) and two attempts per
 * finished delivery (a 503, then a 200 or, for one delivery in 20, another 503: failed). Event g
 * belongs to workspace g mod W; its type turns with each round of the workspaces. `base` keeps the
 * random part of two groups' ids apart.
 */
const BATCH_SQL = `WITH ev AS MATERIALIZED (
    SELECT g, t.ms, timestamptz 'epoch' + t.ms * interval '1 millisecond' AS at, (g % $6)::int AS w, ((g / $6) % 4)::int + 1 AS kind,
           ${idTime('t.ms')} AS time_id, lpad(to_hex($5 + g), 16, '0') AS rnd, g >= $3 - ${PENDING_EVENTS} AS pending
      FROM generate_series($1::bigint, $2::bigint - 1) AS g
     CROSS JOIN LATERAL (SELECT ($4::bigint + floor(g * $9::float8))::bigint AS ms) t
  ), e AS MATERIALIZED (
    SELECT ev.*, 'evt_' || time_id || rnd AS id, ($10::text[])[kind] AS type, ($11::text[])[kind] AS subject_type,
           ($12::text[])[kind] || '_' || time_id || rnd AS subject_id
      FROM ev
  ), new_events AS (
    INSERT INTO events (id, workspace_id, type, subject_type, subject_id, body, created_at)
    SELECT id, ($7::text[])[w + 1], type, subject_type, subject_id,
           '{"id":"' || id || '","type":"' || type || '","created":"' || to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
             || '","subject":{"id":"' || subject_id || '","type":"' || subject_type || '","url":"/v1/' || subject_type || 's/' || subject_id
             || '"},"data":{"object":{"id":"' || subject_id || '","name":"Item ' || g || '","amount":' || (1000 + g % 9000) || ',"currency":"USD"}}}',
           at
      FROM e
  ), d AS MATERIALIZED (
    SELECT e.g, k, e.at, e.id AS event_id, e.type, e.pending, ($7::text[])[e.w + 1] AS workspace_id,
           ($8::text[])[(e.w * $13 + (k * 2 + (e.g / $6) % 2) % $13 + 1)::int] AS endpoint_id,
           'whd_' || e.time_id || lpad(to_hex($5 + e.g * 8 + k), 16, '0') AS id,
           CASE WHEN e.pending THEN 'pending' WHEN (e.g + k * 7) % 20 = 0 THEN 'failed' ELSE 'success' END AS status,
           20 + ((e.g * 7 + k * 13) % 97) * ((e.g + k) % 5 + 1) AS ms
      FROM e CROSS JOIN generate_series(0, ${FAN_OUT - 1}) AS k
  ), new_deliveries AS (
    INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, attempt, next_attempt_at, created_at,
                                    delivered_at, last_attempt_at, error, response_status, response_time_ms, request_headers, response_body, response_headers)
    SELECT id, workspace_id, endpoint_id, event_id, type, status, CASE WHEN pending THEN 0 ELSE 2 END, CASE WHEN pending THEN at END, at,
           CASE WHEN status = 'success' THEN at + interval '60 seconds' END, CASE WHEN NOT pending THEN at + interval '60 seconds' END,
           CASE WHEN status = 'failed' THEN 'HTTP 503' END, CASE status WHEN 'success' THEN 200 WHEN 'failed' THEN 503 END,
           CASE WHEN NOT pending THEN ms END,
           CASE WHEN NOT pending THEN jsonb_build_object('content-type', 'application/json', 'user-agent', 'svc-webhooks/1', 'webhook-id', id,
             'webhook-timestamp', (extract(epoch FROM at)::bigint + 60)::text) END,
           CASE WHEN NOT pending THEN 'ok' END,
           CASE WHEN NOT pending THEN '{"content-type":"text/plain","content-length":"2"}'::jsonb END
      FROM d
  )
  INSERT INTO webhook_delivery_attempts (delivery_id, attempt, workspace_id, endpoint_id, started_at, ok, response_status, response_time_ms, error)
  SELECT d.id, a, d.workspace_id, d.endpoint_id, least(d.at + (a - 1) * interval '60 seconds', now()), a = 2 AND d.status = 'success',
         CASE WHEN a = 2 AND d.status = 'success' THEN 200 ELSE 503 END, d.ms + a * 3,
         CASE WHEN a = 2 AND d.status = 'success' THEN NULL ELSE 'HTTP 503' END
    FROM d CROSS JOIN generate_series(1, 2) AS a
   WHERE NOT d.pending`;

/** Runs `jobs` (functions of a client) on `clients`, each client taking the next job when done. */
async function spread(clients, jobs) {
  let next = 0;
  await Promise.all(clients.map(async (c) => {
    while (next < jobs.length) await jobs[next++](c);
  }));
}

/**
 * Runs `load` (given the clients) as a bulk load: the secondary indexes of the seeded tables dropped,
 * then built again from their own definitions (one sort per index instead of an insert into each
 * for every row), and no foreign-key check per row (session_replication_role = replica: the rows
 * are made consistent). The builds, like the load, are spread over the clients.
 */
export async function bulkLoad(clients, load) {
  const [c] = clients;
  const { rows } = await c.query(
    `SELECT i.indexname, i.indexdef FROM pg_indexes i JOIN pg_index x ON x.indexrelid = (quote_ident(i.schemaname) || '.' || quote_ident(i.indexname))::regclass
      WHERE i.schemaname = current_schema() AND i.tablename = ANY ($1) AND NOT x.indisprimary ORDER BY i.tablename DESC`,
    [['events', 'webhook_deliveries', 'webhook_delivery_attempts']],
  );
  for (const r of rows) await c.query(`DROP INDEX ${r.indexname}`);
  for (const client of clients) await client.query(`SET session_replication_role = replica`);
  const started = performance.now();
  await load(clients);
  const loadSeconds = (performance.now() - started) / 1000;
  for (const client of clients) await client.query(`RESET session_replication_role`);
  const indexStarted = performance.now();
  for (const client of clients) await client.query(`SET maintenance_work_mem = '512MB'`);
  // A partitioned table's index is listed as made ON ONLY the parent; made again, it must reach every partition.
  await spread(clients, rows.map((r) => (client) => client.query(r.indexdef.replace(' ON ONLY ', ' ON '))));
  for (const client of clients) await client.query('RESET maintenance_work_mem');
  return { loadSeconds, indexSeconds: (performance.now() - indexStarted) / 1000 };
}

/**
 * A group of `events` events over the tenants (and FAN_OUT times as many deliveries), the oldest
 * DAYS ago, the newest now, a statement per batch spread over `clients`; `base` separates the ids
 * of two groups.
 */
export async function seedGroup(clients, tenants, events, base, onBatch = () => {}) {
  const end = Date.now();
  const start = end - DAYS * DAY_MS;
  const step = (end - start) / events;
  const batches = [];
  for (let from = 0; from < events; from += BATCH_EVENTS) batches.push([from, Math.min(events, from + BATCH_EVENTS)]);
  let done = 0;
  await spread(clients, batches.map(([from, to]) => async (db) => {
    await db.query(BATCH_SQL, [
      from,
      to,
      events,
      start,
      base,
      tenants.length,
      tenants.map((t) => t.id),
      tenants.flatMap((t) => t.endpointIds),
      step,
      TYPES.map((t) => t[0]),
      TYPES.map((t) => t[1]),
      TYPES.map((t) => t[2]),
      tenants[0].endpointIds.length,
    ]);
    onBatch((done += to - from));
  }));
}
