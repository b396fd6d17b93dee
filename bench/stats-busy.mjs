// `node bench/stats-busy.mjs [ROOT ...]`: the 24h and 7d statistics of one truly busy endpoint (300
// attempts per 5 minutes for 8 days, times spread log-uniformly over 20-500 ms: about 120 rows per
// 5-minute bucket in the 5-minute level) and one sparse endpoint (2 per 5 minutes, distinct times),
// rolled up by the job, on a fresh PostgreSQL schema (BENCH_DATABASE_URL) dropped at the end: each
// statement's EXPLAIN (ANALYZE, BUFFERS) after five executions, the rows it read from each table,
// and the median of 30 calls. Each ROOT (this checkout by default) is a checkout's root, built, whose
// code is measured the same way on its own schema, one after the other; with two (before and after
// a change) a table at the end puts their figures side by side. The scale bench's quick run has too
// few attempts per endpoint to show the difference.

const HERE = new URL('..', import.meta.url).pathname;
const ROOTS = process.argv.length > 2 ? process.argv.slice(2) : [HERE];
const { freshSchema, PG_URL, median, sqlClient } = await import(`${HERE}/bench/lib.mjs`);
const LEVELS = ['webhook_endpoint_stats', 'webhook_endpoint_stats_hourly', 'webhook_endpoint_stats_6h', 'webhook_delivery_attempts'];

/** Rows each table gave the plan (actual rows × loops of its scans), and the plan's shared buffers. */
function rowsRead(plan) {
  const rows = {};
  const walk = (node) => {
    if (node['Relation Name']) rows[node['Relation Name']] = (rows[node['Relation Name']] ?? 0) + node['Actual Rows'] * node['Actual Loops'];
    for (const child of node.Plans ?? []) walk(child);
  };
  walk(plan.Plan);
  return { rows, buffers: (plan.Plan['Shared Hit Blocks'] ?? 0) + (plan.Plan['Shared Read Blocks'] ?? 0), ms: plan['Execution Time'] };
}

async function measure(root) {
  const { openSeeded } = await import(`${root}/bench/service.mjs`);
  const { seedTenants } = await import(`${root}/bench/scale-seed.mjs`);
  const { createOrganization } = await import(`${root}/dist/admin/store.js`);
  const { endpointStats } = await import(`${root}/dist/webhooks/attempts/stats.js`);
  const { runRollup } = await import(`${root}/dist/webhooks/attempts/rollup.js`);
  const schema = await freshSchema();
  const seeded = await openSeeded({ engine: 'postgres', url: schema.url, baseUrl: PG_URL, schema: schema.schema });
  const db = seeded.db;
  const c = sqlClient(schema.url);
  const results = [];
  try {
    console.log(`\n##### ${root}`);
    const org = await createOrganization(db, { slug: `m-${Date.now()}`, name: 'M' }, new Date());
    const [t] = await seedTenants(db, org.id, 'm', 1, 3);
    const [busy, sparse] = t.endpointIds;
    const ins = (endpoint, perBucket, tag, spread) =>
      c.query(
        `INSERT INTO webhook_delivery_attempts (delivery_id, attempt, workspace_id, endpoint_id, started_at, ok, response_status, response_time_ms, error)
         SELECT 'whd_${tag}' || lpad(g::text, 22, '0'), 1, $1, $2, now() - interval '8 days' + g * ($3::float8 * interval '1 millisecond'),
                g % 50 <> 0, CASE WHEN g % 50 <> 0 THEN 200 ELSE 503 END, ${spread}, NULL
           FROM generate_series(0, $4::int - 1) g`,
        [t.id, endpoint, 300_000 / perBucket, 8 * 288 * perBucket],
      );
    const started = performance.now();
    // Busy: 300 attempts per 5 minutes, times spread log-uniformly over 20-500 ms (a hash of g).
    await ins(busy, 300, 'busy', `round(20 * power(25, ((g::bigint * 7919) % 10007) / 10007.0))::int`);
    // Sparse (the scale bench's busy endpoint): 2 per 5 minutes, distinct times.
    await ins(sparse, 2, 'sparse', `16 + (g::bigint * 7919) % 1800`);
    await c.query('VACUUM (ANALYZE) webhook_delivery_attempts');
    console.log(`seeded in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    // Every level from 8 days ago on, as a first run over these attempts would leave them.
    const cols = (
      await c.query(`SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'webhook_endpoint_stats_rollup'`)
    ).rows.map((r) => r.column_name);
    const since = ['rolled_until', 'hourly_since', 'six_hour_since'].filter((col) => cols.includes(col));
    await c.query(`UPDATE webhook_endpoint_stats_rollup SET ${since.map((col) => `${col} = date_bin('5 minutes', now() - interval '8 days', timestamptz 'epoch')`).join(', ')}`);
    const r0 = performance.now();
    const run = await runRollup({ db, clock: { now: () => new Date() }, config: { leaseMs: 60_000 } });
    console.log(`rollup: ${run.steps.length} steps, ${run.steps.reduce((n, s) => n + s.attempts, 0)} attempts, ${((performance.now() - r0) / 1000).toFixed(1)} s`);
    for (const table of LEVELS.slice(0, 3)) {
      const exists = (await c.query(`SELECT to_regclass($1) AS r`, [table])).rows[0].r;
      if (!exists) continue;
      await c.query(`VACUUM (ANALYZE) ${table}`);
      const { rows } = await c.query(`SELECT endpoint_id = $1 AS busy, count(*)::int AS n, pg_size_pretty(pg_total_relation_size($2::regclass)) AS size FROM ${table} GROUP BY 1`, [busy, table]);
      console.log(table, JSON.stringify(rows));
    }
    for (const [name, id] of [['busy', busy], ['sparse', sparse]]) {
      for (const window of ['24h', '7d']) {
        const captured = [];
        const cap = { query: async (sql, params) => (captured.push({ sql, params }), db.query(sql, params)) };
        const view = await endpointStats(cap, id, window, new Date());
        const times = [];
        for (let i = 0; i < 30; i++) {
          const s = performance.now();
          await endpointStats(db, id, window, new Date());
          times.push(performance.now() - s);
        }
        const { sql, params } = captured[0];
        await c.query('BEGIN');
        const lit = params.map((p) => (p instanceof Date ? `'${p.toISOString()}'` : `'${String(p).replaceAll("'", "''")}'`));
        await c.query(`PREPARE p AS ${sql}`);
        for (let i = 0; i < 5; i++) await c.query(`EXECUTE p (${lit.join(', ')})`);
        const plan = (await c.query(`EXPLAIN (ANALYZE, BUFFERS) EXECUTE p (${lit.join(', ')})`)).rows.map((r) => r['QUERY PLAN']);
        const read = rowsRead((await c.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE p (${lit.join(', ')})`)).rows[0]['QUERY PLAN'][0]);
        await c.query('ROLLBACK');
        await c.query('DEALLOCATE ALL');
        const call = median(times);
        results.push({ name, window, call, ...read, attempts: view.attempts, latency: view.latencyMs });
        console.log(
          `\n=== ${name} ${window}: attempts ${view.attempts}, p50/p95/p99 ${view.latencyMs.p50}/${view.latencyMs.p95}/${view.latencyMs.p99}; endpointStats median ${call.toFixed(2)} ms over 30; rows read ${JSON.stringify(read.rows)}`,
        );
        console.log(plan.join('\n'));
      }
    }
  } finally {
    await c.end();
    await db.close();
    await schema.drop();
  }
  return results;
}

const all = [];
for (const root of ROOTS) all.push(await measure(root));
const short = (table) => ({ webhook_endpoint_stats: '5m', webhook_endpoint_stats_hourly: 'hourly', webhook_endpoint_stats_6h: '6h', webhook_delivery_attempts: 'raw' })[table];
console.log(`\n| endpoint, window | ${ROOTS.map((r, i) => `${ROOTS.length === 2 ? ['before', 'after'][i] : r}: call (median of 30) / statement / buffers / rows read`).join(' | ')} |`);
console.log(`|---|${ROOTS.map(() => '---').join('|')}|`);
for (const [i, { name, window }] of all[0].entries()) {
  const cells = all.map((results) => {
    const r = results[i];
    const rows = LEVELS.filter((l) => r.rows[l] !== undefined).map((l) => `${short(l)} ${r.rows[l]}`).join(', ');
    return `${r.call.toFixed(2)} ms / ${r.ms.toFixed(2)} ms / ${r.buffers} / ${rows}`;
  });
  console.log(`| ${name}, ${window} | ${cells.join(' | ')} |`);
}
