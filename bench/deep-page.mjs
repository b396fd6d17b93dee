// Scenario 5: the events page at position 1,000,000 against the first page (keyset, not OFFSET),
// measured in rounds (first page, then deep page) after a warm-up; the ratio is the median.
import { idTimePrefix } from '../dist/lib/ids.js';
import { CursorCodec } from '../dist/http/pagination.js';
import { SecretBox } from '../dist/lib/secretbox.js';
import { median, ratiosByRound, round, runAutocannonOk } from './lib.mjs';
import { MASTER_KEY, settle, startService } from './service.mjs';

/** Seeded ids in the service's own time-ordered shape, which retention and id ranges rely on. */
const EVT_IDS = idTimePrefix('evt', new Date());

const CONNECTIONS = 10;
const SEED_BATCH = 100_000;

/**
 * Mean latency from throughput (Little's law: connections in flight / requests per second). The load
 * generator records latencies in whole milliseconds, too coarse for pages served in a fraction of one.
 */
const meanMs = (result) => (1000 * CONNECTIONS) / result.requests.average;

export async function deepPage(target, seeded, { duration, rows, rounds }) {
  const { db, workspaceId, apiKey } = seeded;
  // In statements of 100,000 rows: each stays well inside the service's statement time-out (5 s),
  // which the seeding connection keeps, on a slow machine too.
  for (let from = 1; from <= rows; from += SEED_BATCH) {
    await db.query(
      `INSERT INTO events (id, workspace_id, type, subject_type, subject_id, body, created_at)
       SELECT '${EVT_IDS}' || lpad(to_hex(g), 16, '0'), $1, 'product.updated', 'product', 'prd_bench',
              '{"id":"${EVT_IDS}' || lpad(to_hex(g), 16, '0') || '","type":"product.updated"}', now() - make_interval(secs => ($2 - g) / 1000.0)
         FROM generate_series($3::int, $4::int) AS g`,
      [workspaceId, rows, from, Math.min(rows, from + SEED_BATCH - 1)],
    );
  }
  await db.query('ANALYZE events');
  await settle(db);
  const [position] = await db.query(
    'SELECT id, created_at FROM events WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1',
    [workspaceId, rows - 40],
  );
  const codec = new CursorCodec(new SecretBox(Buffer.from(MASTER_KEY, 'hex')).deriveKey('cursor'));
  const binding = { list: 'events', scope: workspaceId, limit: 20, filters: { type: undefined, subjectType: undefined, subjectId: undefined } };
  const page = codec.encode({ direction: 'next', at: { createdAt: position.created_at, id: position.id }, inclusive: false }, binding);

  const service = await startService(target, { SVC_WORKERS: '0' });
  const headers = { authorization: `Bearer ${apiKey}` };
  const firstUrl = `${service.url}/v1/events?limit=20`;
  const deepUrl = `${firstUrl}&page=${page}`;
  const load = (url, seconds) => runAutocannonOk({ url, connections: CONNECTIONS, duration: seconds, headers });
  for (const url of [firstUrl, deepUrl]) await load(url, 1);
  const runs = [];
  for (let i = 0; i < rounds; i++) {
    const first = await load(firstUrl, duration);
    const deep = await load(deepUrl, duration);
    runs.push({ first, deep, ratio: first.requests.average / deep.requests.average });
  }
  const rss = service.peakRssMb();
  await service.stop();
  const ratio = median(runs.map((r) => r.ratio));
  return {
    name: `Deep page (events page at position ${rows.toLocaleString('en')} vs the first page)`,
    value: round(median(runs.map((r) => meanMs(r.deep))), 3),
    unit: 'ms mean latency',
    extra: ratiosByRound(runs),
    p99Ms: median(runs.map((r) => r.deep.latency.p99)),
    baseline: round(median(runs.map((r) => meanMs(r.first))), 3),
    baselineName: 'first page',
    baselineP99Ms: median(runs.map((r) => r.first.latency.p99)),
    ratio: round(ratio, 3),
    target: 'ratio <= 1.5',
    pass: ratio <= 1.5,
    peakRssMb: rss,
    rounds: runs.map((r) => ({ deepMs: round(meanMs(r.deep), 3), firstMs: round(meanMs(r.first), 3), ratio: round(r.ratio, 3) })),
  };
}
