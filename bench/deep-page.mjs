// Scenario 5: the events page at position 1,000,000 against the first page (keyset, not OFFSET).
import { CursorCodec } from '../dist/http/pagination.js';
import { SecretBox } from '../dist/lib/secretbox.js';
import { round, runAutocannon } from './lib.mjs';
import { MASTER_KEY, settle, startService } from './service.mjs';

export async function deepPage(target, seeded, { duration, rows }) {
  const { db, workspaceId, apiKey } = seeded;
  await db.query(
    `INSERT INTO events (id, workspace_id, type, subject_type, subject_id, body, created_at)
     SELECT 'evt_' || lpad(to_hex(g), 26, '0'), $1, 'product.updated', 'product', 'prd_bench',
            '{"id":"evt_' || lpad(to_hex(g), 26, '0') || '","type":"product.updated"}', now() - make_interval(secs => ($2 - g) / 1000.0)
       FROM generate_series(1, $2) AS g`,
    [workspaceId, rows],
  );
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
  const first = await runAutocannon({ url: `${service.url}/v1/events?limit=20`, connections: 10, duration, headers });
  const deep = await runAutocannon({ url: `${service.url}/v1/events?limit=20&page=${page}`, connections: 10, duration, headers });
  const rss = service.peakRssMb();
  await service.stop();
  if (deep.non2xx > 0 || first.non2xx > 0) throw new Error(`deep page: non-2xx answers (${first.non2xx}, ${deep.non2xx})`);
  const ratio = deep.latency.average / first.latency.average;
  return {
    name: `Deep page (events page at position ${rows.toLocaleString('en')} vs the first page)`,
    value: round(deep.latency.average, 2),
    unit: 'ms mean latency',
    p99Ms: deep.latency.p99,
    baseline: round(first.latency.average, 2),
    baselineName: 'first page',
    baselineP99Ms: first.latency.p99,
    ratio: round(ratio, 3),
    target: 'ratio <= 1.5',
    pass: ratio <= 1.5,
    peakRssMb: rss,
  };
}
