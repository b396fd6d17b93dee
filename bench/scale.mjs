// Scenario: the hot queries on big tables. The same requests, one at a time through the real service,
// on small tables (a fresh schema, a few thousand rows) and on big ones (10 million deliveries and
// about 20 million attempts in full; 200k and 400k with --quick), in the same run: the delivery
// claim (the worker's statement, through its own code, in a transaction rolled back so every claim
// finds the same rows), the delivery list (first page, by endpoint and status, pending, by event),
// the event log (first page, by type) and an endpoint's statistics (24h, 7d). On the big tables the
// measured workspaces are of two kinds: the small set's (the same few rows each, so only the tables
// around them grew) and busy ones (100,000 deliveries each). The EXPLAIN (ANALYZE, BUFFERS) of each
// statement on the big tables goes into the results.
import { createOrganization } from '../dist/account/admin.js';
import { listEvents } from '../dist/engine/log/store.js';
import { endpointStats } from '../dist/webhooks/attempts/stats.js';
import { runRollup } from '../dist/webhooks/attempts/rollup.js';
import { listDeliveries } from '../dist/webhooks/deliveries/store.js';
import { claimLocked } from '../dist/engine/delivery/claim.js';
import { Hold } from '../dist/engine/delivery/hold.js';
import { PG_URL, freshSchema, round, sqlClient } from './lib.mjs';
import { CLAIM_LIMIT, ENDPOINTS, REQUESTS, WARM_UP, measure, sampleEvents } from './scale-measure.mjs';
import { FAN_OUT, bulkLoad, seedGroup, seedTenants } from './scale-seed.mjs';
import { openSeeded, settle, startService } from './service.mjs';

const WORKSPACES = 100;
/** The small set: 5,000 deliveries over 100 workspaces. */
const SMALL_EVENTS = 1_000;
const TARGET = 1.3;
const LEASE_MS = 60_000;
const ROLLUP_DAYS = 8;

/** A client without the service's statement time-out, for seeding and EXPLAIN. */
async function client(url) {
  const c = sqlClient(url);
  return c;
}

/**
 * The rollup job (dist) over the last ROLLUP_DAYS: the watermark (and the start of the hourly and
 * 6-hour levels) is set there first, so the job counts what the statistics' windows (7 days at
 * most) can read and not the older attempts, which no window reads.
 */
async function rollUp(db, c) {
  const started = performance.now();
  await c.query(
    `UPDATE webhook_endpoint_stats_rollup SET (rolled_until, hourly_since, six_hour_since) = (SELECT d, d, d FROM date_bin('5 minutes', now() - make_interval(days => $1), timestamptz 'epoch') d)`,
    [ROLLUP_DAYS],
  );
  const run = await runRollup({ db, clock: { now: () => new Date() }, config: { leaseMs: LEASE_MS } });
  await c.query('ANALYZE webhook_endpoint_stats, webhook_endpoint_stats_hourly, webhook_endpoint_stats_6h');
  return { seconds: (performance.now() - started) / 1000, steps: run.steps.length, attempts: run.steps.reduce((n, s) => n + s.attempts, 0) };
}

async function sizes(c) {
  const tables = ['events', 'webhook_deliveries', 'webhook_delivery_attempts', 'webhook_endpoint_stats', 'webhook_endpoint_stats_hourly', 'webhook_endpoint_stats_6h'];
  const rows = await c.query(
    `SELECT relname AS name, coalesce((SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree(c.oid)), pg_total_relation_size(c.oid)) AS total,
            coalesce((SELECT sum(pg_relation_size(relid)) FROM pg_partition_tree(c.oid)), pg_relation_size(c.oid)) AS heap, reltuples::bigint AS rows
       FROM pg_class c WHERE relname = ANY ($1::text[]) AND relnamespace = current_schema()::regnamespace ORDER BY relname`,
    [`{${tables.join(',')}}`],
  );
  return rows.rows.map((r) => ({ name: r.name, rows: Number(r.rows), totalMb: Number(r.total) / 2 ** 20, heapMb: Number(r.heap) / 2 ** 20 }));
}

/** Statistics and the visibility map (which index-only scans read) as autovacuum leaves them after a load. */
async function vacuum(clients) {
  const started = performance.now();
  const tables = ['webhook_delivery_attempts', 'webhook_deliveries', 'events', 'webhook_endpoints'];
  let next = 0;
  await Promise.all(clients.map(async (c) => {
    while (next < tables.length) await c.query(`VACUUM (ANALYZE) ${tables[next++]}`);
  }));
  return (performance.now() - started) / 1000;
}

const literal = (c, v) =>
  v === null || v === undefined
    ? 'NULL'
    : v instanceof Date
      ? `'${v.toISOString()}'`
      : typeof v === 'number'
        ? String(v)
        : Array.isArray(v)
          ? c.escapeLiteral(`{${v.map((x) => `"${x}"`).join(',')}}`)
          : c.escapeLiteral(String(v));

/**
 * The plan of a captured statement as the service runs it: a prepared statement executed five
 * times first (after which PostgreSQL may keep a generic plan), then EXPLAIN (ANALYZE, BUFFERS), in a
 * transaction rolled back. `generic` forces the generic plan, as the held claim's settings do.
 */
async function explain(c, { sql, params }, generic) {
  await c.query('BEGIN');
  try {
    if (generic) await c.query('SET LOCAL plan_cache_mode = force_generic_plan');
    await c.query(`PREPARE scale_plan AS ${sql}`);
    const execute = `EXECUTE scale_plan (${(params ?? []).map((p) => literal(c, p)).join(', ')})`;
    if ((params ?? []).length === 0) throw new Error('no parameters');
    for (let i = 0; i < 5; i++) await c.query(execute);
    const plan = await c.query(`EXPLAIN (ANALYZE, BUFFERS) ${execute}`);
    return plan.rows.map((r) => r['QUERY PLAN']).join('\n');
  } finally {
    await c.query('ROLLBACK');
    await c.query('DEALLOCATE ALL');
  }
}

/** The SQL of each measured query (captured from the stores' own calls), with its plan on the big tables. */
async function plans(db, c, busy, events) {
  const captured = [];
  const capture = (q) => ({
    query: async (sql, params) => {
      captured.push({ sql, params });
      return q.query(sql, params);
    },
  });
  const cap = capture(db);
  const [t] = busy;
  const event = events[0];
  const out = [];
  const add = async (query, run, generic = false) => {
    captured.length = 0;
    await run();
    const statement = captured.at(-1);
    out.push({ query, sql: statement.sql, params: statement.params, plan: await explain(c, statement, generic) });
  };
  const tx = await db.begin(Hold.SETTINGS);
  try {
    await add('claim', () => claimLocked(capture(tx), {}, new Date(), CLAIM_LIMIT), true);
  } finally {
    await tx.rollback();
  }
  await add('deliveries, first page', () => listDeliveries(cap, t.id, {}, null, 20));
  await add('deliveries, endpointId and status=failed', () => listDeliveries(cap, t.id, { endpointId: t.endpointIds[0], status: 'failed' }, null, 20));
  await add('deliveries, status=pending', () => listDeliveries(cap, t.id, { status: 'pending' }, null, 20));
  await add('deliveries, eventId', () => listDeliveries(cap, event.workspaceId, { eventId: event.id }, null, 20));
  await add('events, first page', () => listEvents(cap, t.id, {}, null, 20));
  await add('events, type=order.paid', () => listEvents(cap, t.id, { type: 'order.paid' }, null, 20));
  await add('endpoint stats, 24h', () => endpointStats(cap, t.endpointIds[0], '24h', new Date()));
  await add('endpoint stats, 7d', () => endpointStats(cap, t.endpointIds[0], '7d', new Date()));
  return out;
}

function table(small, quiet, busy) {
  const lines = [
    '| query | small: median / p99 ms | big, same small workspaces: median / p99 ms | ratio | big, busy workspaces: median / p99 ms | ratio |',
    '|---|---|---|---|---|---|',
  ];
  for (const [i, s] of small.entries()) {
    const q = quiet[i];
    const b = busy[i];
    lines.push(
      `| ${s.query} | ${round(s.median, 2)} / ${round(s.p99, 2)} | ${round(q.median, 2)} / ${round(q.p99, 2)} | ${round(q.median / s.median, 2)} | ${round(b.median, 2)} / ${round(b.p99, 2)} | ${round(b.median / s.median, 2)} |`,
    );
  }
  return lines.join('\n');
}

/** Clients without the service's statement time-out, for seeding, VACUUM and EXPLAIN: two, one per core. */
async function clients(url) {
  return Promise.all([client(url), client(url)]);
}

async function stopAll(list) {
  await Promise.all(list.filter(Boolean).map((x) => (x.stop ? x.stop() : x.end())));
}

export async function scale(target, seeded, { scaleDeliveries }) {
  const bigEvents = Math.round(scaleDeliveries / FAN_OUT);
  const schema = await freshSchema();
  const bigTarget = { engine: 'postgres', url: schema.url, baseUrl: PG_URL, schema: schema.schema };
  const big = await openSeeded(bigTarget);
  const smallClients = await clients(target.url);
  const bigClients = await clients(schema.url);
  const services = [];
  try {
    // Small: the run's fresh schema, a few thousand rows.
    process.stdout.write('  small tables\n');
    const smallOrg = await createOrganization(seeded.db, { slug: `scale-${Date.now()}`, name: 'Scale' }, new Date());
    const smallTenants = await seedTenants(seeded.db, smallOrg.id, 'a', WORKSPACES, ENDPOINTS);
    await seedGroup(smallClients, smallTenants, SMALL_EVENTS, 0);
    await vacuum(smallClients);
    await rollUp(seeded.db, smallClients[0]);

    // Big: another schema, the small set's workspaces again (same shape) and the busy ones around them.
    const [c] = bigClients;
    const dbSize = async () => Number((await c.query('SELECT pg_database_size(current_database()) AS n')).rows[0].n) / 2 ** 30;
    const sizeBefore = await dbSize();
    process.stdout.write(`  big tables: ${scaleDeliveries.toLocaleString('en')} deliveries\n`);
    const org = await createOrganization(big.db, { slug: `scale-${Date.now()}`, name: 'Scale' }, new Date());
    const quietTenants = await seedTenants(big.db, org.id, 'a', WORKSPACES, ENDPOINTS);
    const busyTenants = await seedTenants(big.db, org.id, 'b', WORKSPACES, ENDPOINTS);
    const { loadSeconds, indexSeconds } = await bulkLoad(bigClients, async (list) => {
      await seedGroup(list, quietTenants, SMALL_EVENTS, 0);
      await seedGroup(list, busyTenants, bigEvents, 2 ** 40, (done) => process.stdout.write(`    seeded ${(done * FAN_OUT).toLocaleString('en')} deliveries\n`));
    });
    process.stdout.write(`    rows in ${round(loadSeconds, 0)} s, indexes in ${round(indexSeconds, 0)} s\n`);
    const vacuumSeconds = await vacuum(bigClients);
    const rollup = await rollUp(big.db, c);
    const seedSeconds = loadSeconds + indexSeconds + vacuumSeconds + rollup.seconds;
    process.stdout.write(`    vacuum in ${round(vacuumSeconds, 0)} s, rollup in ${round(rollup.seconds, 0)} s\n`);
    const bigSizes = await sizes(c);
    const sizeAfter = await dbSize();
    await settle(big.db);

    const sides = [
      { db: seeded.db, tenants: smallTenants, service: await startService(target, { SVC_WORKERS: '0' }) },
      { db: big.db, tenants: quietTenants, service: await startService(bigTarget, { SVC_WORKERS: '0' }) },
    ];
    sides.push({ db: big.db, tenants: busyTenants, service: sides[1].service });
    services.push(sides[0].service, sides[1].service);
    for (const side of sides) side.events = await sampleEvents(side.db, side.tenants, 50);
    const [small, quiet, busy] = await measure(sides);
    const peakRssMb = Math.max(...services.map((s) => s.peakRssMb() ?? 0));
    const bigPlans = await plans(big.db, c, busyTenants, sides[2].events);

    const ratios = small.map((s, i) => ({ query: s.query, quiet: quiet[i].median / s.median, busy: busy[i].median / s.median }));
    const worst = Math.max(...ratios.map((r) => r.busy));
    const deliveries = bigSizes.find((s) => s.name === 'webhook_deliveries');
    const attempts = bigSizes.find((s) => s.name === 'webhook_delivery_attempts');
    const details = [
      `## Scale: ${deliveries.rows.toLocaleString('en')} deliveries, ${attempts.rows.toLocaleString('en')} attempts`,
      '',
      `Seeding the big tables took ${round(seedSeconds, 0)} s: ${round(loadSeconds, 0)} s for the rows (${Math.ceil(bigEvents / 200_000)} statements on 2 connections, secondary indexes dropped), ` +
        `${round(indexSeconds, 0)} s to build the indexes again, ${round(vacuumSeconds, 0)} s for VACUUM (ANALYZE), ${round(rollup.seconds, 0)} s for the rollup job over the last ${ROLLUP_DAYS} days ` +
        `(${rollup.steps} steps, ${rollup.attempts.toLocaleString('en')} attempts). The database grew by ${round(sizeAfter - sizeBefore, 1)} GiB.`,
      '',
      '| table | rows | heap MB | with indexes MB |',
      '|---|---|---|---|',
      ...bigSizes.map((s) => `| ${s.name} | ${s.rows.toLocaleString('en')} | ${round(s.heapMb, 0)} | ${round(s.totalMb, 0)} |`),
      '',
      `${REQUESTS} requests each (after ${WARM_UP} to warm up), one at a time through the service, taking turns between the three sides; the claims in-process ` +
        `through the worker's code. Ratio: big median / small median (target <= ${TARGET}).`,
      '',
      table(small, quiet, busy),
      '',
      `Plans on the big tables (busy workspace), each after five executions of the prepared statement:`,
      '',
      ...bigPlans.flatMap((p) => [`### ${p.query}`, '', '```sql', p.sql.trim(), '```', '', '```', p.plan, '```', '']),
    ].join('\n');
    return {
      name: `Scale (${deliveries.rows.toLocaleString('en')} deliveries, ${attempts.rows.toLocaleString('en')} attempts; claim, delivery and event lists, endpoint stats; big vs small tables)`,
      value: round(worst, 2),
      unit: 'x worst median ratio',
      extra: [`seeded in ${round(seedSeconds, 0)} s, ${round(sizeAfter - sizeBefore, 1)} GiB`, ...ratios.map((r) => `${r.query} ${round(r.busy, 2)}x`)].join('; '),
      target: `<= ${TARGET}x each`,
      pass: ratios.every((r) => r.busy <= TARGET),
      peakRssMb,
      small,
      bigSmallWorkspaces: quiet,
      bigBusyWorkspaces: busy,
      sizes: bigSizes,
      seedSeconds: { load: loadSeconds, indexes: indexSeconds, vacuum: vacuumSeconds, rollup: rollup.seconds },
      details,
    };
  } finally {
    await stopAll(services);
    await stopAll([...smallClients, ...bigClients]);
    await big.db.close();
    await schema.drop();
  }
}
