import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensurePartitions, listPartitions } from '../src/db/partitions.js';
import { ManualClock } from '../src/lib/clock.js';
import { runRetention } from '../src/server/retention.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { addEndpoint, createProduct } from './helpers/delivery.js';

const MINUTE = 60_000;
const DAY = 86_400_000;
const PRODUCTS = 200;

/**
 * An app with 1-minute partitions and five minutes kept, and one minute's range past the retention:
 * PRODUCTS products to five endpoints that answered and one that never does, so a sixth of its
 * deliveries are pending. Every delivery has one attempt: a success, or a time-out for the hanging
 * endpoint's. Returns the app and the range's deliveries partition.
 */
async function openKeptRange(): Promise<{ t: TestApp; range: string }> {
  // The history partition of a fresh schema reaches a day past now: start beyond it.
  const clock = new ManualClock(Math.floor(Date.now() / MINUTE) * MINUTE + 2 * DAY);
  const t = await startTestApp({ clock, config: { partitionWidthMs: MINUTE, retentionMs: 5 * MINUTE, archiveDir: null } });
  await ensurePartitions(t.ctx.db, clock.now(), MINUTE);
  for (let i = 0; i < 5; i++) await addEndpoint(t, `https://hooks.example.com/ok/${i}`);
  const hanging = (await addEndpoint(t, 'https://hooks.example.com/hangs')).id;

  clock.advance(MINUTE);
  await ensurePartitions(t.ctx.db, clock.now(), MINUTE);
  const range = (await listPartitions(t.ctx.db, 'webhook_deliveries')).find((p) => p.from !== null && p.from <= clock.now().getTime() && p.to > clock.now().getTime())!.name;
  for (let i = 0; i < PRODUCTS; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => createProduct(t, `Product ${i + j}`)));
  await t.ctx.db.query(`UPDATE webhook_deliveries SET status = 'success', next_attempt_at = NULL WHERE endpoint_id <> $1`, [hanging]);
  await t.ctx.db.query(
    `INSERT INTO webhook_delivery_attempts (delivery_id, attempt, workspace_id, endpoint_id, started_at, ok, response_status)
     SELECT id, 1, workspace_id, endpoint_id, created_at, status = 'success', CASE WHEN status = 'success' THEN 200 END FROM webhook_deliveries`,
  );
  clock.advance(10 * MINUTE);
  await ensurePartitions(t.ctx.db, clock.now(), MINUTE);
  return { t, range };
}

/**
 * A range past the retention kept for its pending deliveries is shrunk to them: their rows, attempts
 * and events stay with their ids, everything that ended goes, and the disk space comes back.
 */
describe('compaction of kept ranges', () => {
  let t: TestApp;
  let key: string;
  let range: string;

  const ids = async (sql: string) => (await t.ctx.db.query<{ id: string }>(sql)).map((r) => r.id).sort();
  const pendingIds = () => ids(`SELECT id FROM webhook_deliveries WHERE status = 'pending'`);
  const size = async () => {
    const [row] = await t.ctx.db.query<{ bytes: string }>(
      `SELECT sum(pg_total_relation_size(c.oid))::bigint AS bytes FROM pg_class c WHERE c.relname IN ($1, $2, $3)`,
      [range, range.replace('webhook_deliveries', 'webhook_delivery_attempts'), range.replace('webhook_deliveries', 'events')],
    );
    return Number(row.bytes);
  };

  beforeAll(async () => {
    ({ t, range } = await openKeptRange());
    key = t.demo.workspaces[0].apiKey;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('shrinks the range to its pending deliveries, their attempts and events, in two processes at once', async () => {
    const pending = await pendingIds();
    expect(pending).toHaveLength(PRODUCTS);
    const events = await ids(`SELECT event_id AS id FROM webhook_deliveries WHERE status = 'pending'`);
    const sizeBefore = await size();

    const runs = await Promise.all([0, 1].map(() => runRetention(t.ctx, { pauseMs: 0 })));
    for (const run of runs) expect(run.retired!.kept).toEqual([{ range, reason: 'pending deliveries' }]);
    // One of the two rewrote it; the other found it done.
    const compacted = runs.flatMap((r) => r.retired!.compacted);
    expect(compacted).toEqual([{ range, before: 6 * PRODUCTS, after: PRODUCTS, attempts: PRODUCTS, events: PRODUCTS }]);

    expect(await ids('SELECT id FROM webhook_deliveries')).toEqual(pending);
    expect(await ids('SELECT delivery_id AS id FROM webhook_delivery_attempts')).toEqual(pending);
    expect(await ids('SELECT id FROM events')).toEqual(events);
    expect(await size()).toBeLessThan(sizeBefore / 2);

    // Read through the API as before, by the same id; one that ended is gone, as if dropped.
    const read = await t.call(key, 'GET', `/v1/webhooks/deliveries/${pending[0]}`);
    expect(read.statusCode).toBe(200);
    expect(read.json().delivery).toMatchObject({ id: pending[0], status: 'pending' });
    const attempts = await t.call(key, 'GET', `/v1/webhooks/deliveries/${pending[0]}/attempts`);
    expect(attempts.json().data).toHaveLength(1);
  });

  it('leaves a range alone when little would go, and drops it once its work ends', async () => {
    const again = await runRetention(t.ctx, { pauseMs: 0 });
    expect(again.retired!.compacted).toEqual([]);
    expect(again.retired!.kept).toHaveLength(1);
    await t.ctx.db.query(`UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL`);
    const last = await runRetention(t.ctx, { pauseMs: 0 });
    expect(last.retired!.dropped).toEqual([range]);
    expect(await ids('SELECT id FROM webhook_deliveries')).toEqual([]);
  });
});

/** The rewrite never waits for a lock: a partition in use is left for a later run. */
describe('compaction beside a transaction holding a row of the range', () => {
  let t: TestApp;

  beforeAll(async () => {
    ({ t } = await openKeptRange());
  });
  afterAll(async () => {
    await t?.close();
  });

  it('gives up while a worker holds a pending row, and compacts after it commits', async () => {
    const [row] = await t.ctx.db.query<{ id: string }>(`SELECT id FROM webhook_deliveries WHERE status = 'pending' ORDER BY id LIMIT 1`);
    const worker = await t.ctx.db.begin();
    try {
      await worker.query('SELECT id FROM webhook_deliveries WHERE id = $1 FOR UPDATE', [row.id]);
      const held = await runRetention(t.ctx, { pauseMs: 0 });
      expect(held.retired!.compacted).toEqual([]);
      expect(held.retired!.kept).toHaveLength(1);
      // The worker's write, made after, lands and is kept by the compaction that follows.
      await worker.query(`UPDATE webhook_deliveries SET attempt = attempt + 1 WHERE id = $1`, [row.id]);
    } finally {
      await worker.commit();
    }
    const after = await runRetention(t.ctx, { pauseMs: 0 });
    expect(after.retired!.compacted).toHaveLength(1);
    const [kept] = await t.ctx.db.query<{ attempt: number }>('SELECT attempt FROM webhook_deliveries WHERE id = $1', [row.id]);
    expect(kept.attempt).toBe(1);
  });
});
