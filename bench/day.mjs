// Scenario "a day in twenty minutes": the fleet (1,000 endpoints, 20-200 ms receivers, 2% failing, 1%
// hanging) at 70 products/s (680 healthy deliveries/s) for BENCH_DAY_MINUTES (20), with 1-minute
// partitions, SVC_RETENTION=5m and a retry schedule compressed alike, beside the same run without
// retention. Measured: the hot tables'
// size on disk minute by minute (flat after the sixth minute, within 20%), change-to-arrival p99 in
// the last five minutes against the first five (<= 1.2x), write-ahead log per product created
// against the run without retention (<= 1.1x), every healthy delivery arriving once.
import { bound } from '../dist/db/partitions.js';
import { createOrganization } from '../dist/account/admin.js';
import { freshSchema, PG_URL, round, sleep, sqlClient, startReceiver, steadyLoad } from './lib.mjs';
import { seedFleet } from './fleet.mjs';
import { openSeeded, settle, startService } from './service.mjs';

const RATE = 70;
/**
 * Time is compressed, the retry schedule with it: by default a delivery's retries end after about
 * three days, a tenth of the 30 days kept; here they end within about two minutes (ten attempts of
 * up to 10 s each, 30 s apart in all), under the five minutes kept. Otherwise every minute's
 * partition would hold the failing endpoints' retries, pending work that keeps it (retire.ts).
 */
const RETRY_SCHEDULE = '1s,1s,2s,2s,3s,3s,4s,4s,5s,5s';
const WINDOW_MINUTES = 5;
const TABLES = ['webhook_deliveries', 'webhook_delivery_attempts', 'events'];
const PREFIXES = { webhook_deliveries: 'whd', webhook_delivery_attempts: 'whd', events: 'evt' };

const SIZE_SQL = `SELECT coalesce(sum(pg_total_relation_size(p.relid)), 0)::bigint AS bytes
  FROM unnest($1::text[]) AS t (name), pg_partition_tree(t.name::regclass) AS p WHERE p.isleaf`;

/**
 * A fresh schema's history partition reaches a day past its migration, so that an upgrade in place
 * takes the rows written meanwhile. Here, with nothing in it yet, it ends now: minute partitions
 * from the first minute on.
 */
async function historyEndsNow(client) {
  const now = Date.now();
  for (const table of TABLES) {
    await client.query(`ALTER TABLE ${table} DETACH PARTITION ${table}_history`);
    await client.query(`ALTER TABLE ${table} ATTACH PARTITION ${table}_history FOR VALUES FROM (MINVALUE) TO ('${bound(PREFIXES[table], now)}')`);
  }
}

async function oneRun(minutes, retention) {
  const schema = await freshSchema(PG_URL);
  const target = { engine: 'postgres', url: schema.url, baseUrl: PG_URL, schema: schema.schema };
  const seeded = await openSeeded(target);
  const client = sqlClient(schema.url);
  const receiver = await startReceiver('fleet');
  try {
    const org = await createOrganization(seeded.db, { slug: `day-${Date.now()}`, name: 'Fleet' }, new Date());
    const workspaces = await seedFleet(seeded.db, org.id, receiver.base);
    await historyEndsNow(client);
    await settle(seeded.db);
    const wal = async () => (await client.query('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn;
    const walFrom = await wal();
    const service = await startService(target, { SVC_PARTITION_WIDTH: '1m', SVC_RETENTION: retention ? '5m' : '0', SVC_RETRY_SCHEDULE: RETRY_SCHEDULE });
    try {
      const seconds = minutes * 60;
      const started = performance.now();
      const loading = steadyLoad(service.url, workspaces.map((w) => w.apiKey), RATE, seconds);
      const sizes = [];
      let first = null;
      for (let minute = 1; minute <= minutes; minute++) {
        await sleep(started + minute * 60_000 - performance.now());
        sizes.push(Number((await client.query(SIZE_SQL, [TABLES])).rows[0].bytes));
        if (minute === WINDOW_MINUTES) first = await receiver.stats();
        if (minute === minutes - WINDOW_MINUTES) await receiver.reset();
      }
      const load = await loading;
      await sleep(1500);
      const last = await receiver.stats();
      const [{ bytes }] = (await client.query(`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint AS bytes`, [walFrom])).rows;
      const events = Math.round(RATE * seconds);
      const expected = workspaces.reduce((sum, w, i) => sum + Math.ceil((events - i) / workspaces.length) * w.endpoints.filter((e) => e.healthy).length, 0);
      return { sizes, first, last, walPerEvent: Number(bytes) / events, expected, failed: load.failed, failures: load.failures, peakRssMb: service.peakRssMb() };
    } finally {
      await service.stop();
    }
  } finally {
    await receiver.stop();
    await client.end();
    await seeded.db.close();
    await schema.drop();
  }
}

const mb = (bytes) => `${round(bytes / 2 ** 20, 1)} MB`;

/** How far the sizes after the sixth minute stray from the sixth minute's: the largest deviation, as a part of it. */
function spread(sizes) {
  const after = sizes.slice(6);
  if (after.length === 0) return null;
  const sixth = sizes[5];
  return Math.max(...after.map((s) => Math.abs(s - sixth) / sixth));
}

export async function day(_target, _seeded, settings) {
  const minutes = Number(process.env.BENCH_DAY_MINUTES ?? settings.dayMinutes);
  const kept = await oneRun(minutes, true);
  const all = await oneRun(minutes, false);
  const flat = spread(kept.sizes);
  const tail = kept.first?.p99 ? kept.last.p99 / kept.first.p99 : null;
  const walRatio = kept.walPerEvent / all.walPerEvent;
  const complete = kept.last.unique >= kept.expected && kept.last.repeated === 0 && kept.failed === 0;
  const details = [
    `### A day in ${minutes} minutes: the hot tables' size at the end of each minute`,
    '',
    '| minute | SVC_RETENTION=5m | without retention |',
    '|---|---|---|',
    ...kept.sizes.map((s, i) => `| ${i + 1} | ${mb(s)} | ${mb(all.sizes[i])} |`),
  ].join('\n');
  return {
    name: `A day in ${minutes} minutes (the fleet at ${RATE} products/s, 1-minute partitions, SVC_RETENTION=5m, beside the same run without retention)`,
    value: tail === null ? null : round(tail, 2),
    unit: 'x p99, last 5 min / first 5',
    extra: `p99 first ${WINDOW_MINUTES} min ${kept.first?.p99} ms, last ${WINDOW_MINUTES} min ${kept.last.p99} ms; size after minute 6 within ${flat === null ? '-' : `${round(flat * 100, 1)}%`} of the sixth minute's (${mb(kept.sizes.at(-1))} at the end, ${mb(all.sizes.at(-1))} without retention); WAL per product ${round(kept.walPerEvent / 1024, 1)} KiB against ${round(all.walPerEvent / 1024, 1)} KiB without retention (${round(walRatio, 3)}x); ${kept.last.unique} of ${kept.expected} healthy deliveries arrived, ${kept.last.repeated} twice; ${kept.failed} requests failed${kept.failures.length ? ` (${kept.failures.join('; ')})` : ''}`,
    target: 'size flat within 20% after minute 6, p99 <= 1.2x, WAL <= 1.1x, all once',
    pass: complete && flat !== null && flat <= 0.2 && tail !== null && tail <= 1.2 && walRatio <= 1.1,
    peakRssMb: Math.max(kept.peakRssMb ?? 0, all.peakRssMb ?? 0),
    details,
  };
}
day.standalone = true;
