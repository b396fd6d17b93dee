import { afterEach, describe, expect, it } from 'vitest';
import { claimInProcess } from '../../src/webhooks/engine/claim.js';
import type { RowLock } from '../../src/webhooks/engine/job.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { ENGINE } from '../helpers/db.js';
import { addEndpoint, createProduct, eventually, testWorker } from '../helpers/delivery.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

/** Rows as the claim left them: a claim of the embedded engine writes nothing. */
async function rowsNow(t: TestApp): Promise<{ id: string; status: string; attempt: number; next_attempt_at: Date }[]> {
  return t.ctx.db.query('SELECT id, status, attempt, next_attempt_at FROM webhook_deliveries ORDER BY id');
}

/** A lease far longer than any test: a row freed by a lease running out would not come back in time. */
const LONG_LEASE = { leaseMs: 10 * 60_000 };

describe('claims of rows the process takes for itself (the embedded engine)', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  async function setup(receiverScript?: Parameters<typeof startReceiver>[0]): Promise<{ t: TestApp; receiver: Receiver }> {
    const t = await startTestApp({ config: { allowPrivateTargets: true, ...LONG_LEASE } });
    cleanup.push(() => t.close());
    const receiver = await startReceiver(receiverScript);
    cleanup.push(() => receiver.close());
    return { t, receiver };
  }

  it('skips the rows given as taken and writes nothing to the rows it takes', async () => {
    const { t, receiver } = await setup();
    await addEndpoint(t, receiver.url);
    for (let i = 0; i < 5; i++) await createProduct(t, `Hat ${i}`);
    const before = await rowsNow(t);
    expect(before).toHaveLength(5);
    const lock: RowLock = { finish: () => {}, drop: () => {} };
    const later = new Date(Date.now() + 60_000);

    const first = await claimInProcess(t.ctx.db, lock, later, 3, []);
    expect(first).toHaveLength(3);
    expect(first.every((job) => job.held === lock && job.body !== null)).toBe(true);
    // Each job's mark is its row's due time, as the row still holds it.
    const due = new Map(before.map((r) => [r.id, r.next_attempt_at.getTime()]));
    for (const job of first) expect(job.mark.getTime()).toBe(due.get(job.id));
    expect(await rowsNow(t)).toEqual(before);

    const rest = await claimInProcess(t.ctx.db, lock, later, 3, first.map((job) => job.id));
    expect(rest.map((job) => job.id).sort()).toEqual(before.map((r) => r.id).filter((id) => !first.some((job) => job.id === id)).sort());
    expect(await claimInProcess(t.ctx.db, lock, later, 3, before.map((r) => r.id))).toEqual([]);
    expect(await rowsNow(t)).toEqual(before);
  });

  it.skipIf(ENGINE !== 'pglite')('sends each delivery once through two workers of one process, and leaves rows in flight as they were', async () => {
    // Slow answers keep rows in flight while the other worker claims.
    const { t, receiver } = await setup(() => ({ status: 200, delayMs: 150 }));
    await addEndpoint(t, `${receiver.url}/a`);
    await addEndpoint(t, `${receiver.url}/b`);
    for (let i = 0; i < 20; i++) await createProduct(t, `Hat ${i}`);
    const before = await rowsNow(t);
    expect(before).toHaveLength(40);

    const workers = [testWorker(t, { concurrency: 4 }), testWorker(t, { concurrency: 4 })];
    for (const worker of workers) {
      await worker.start();
      cleanup.push(() => worker.stop());
    }
    await receiver.waitFor(4);
    // Rows in flight are pending with the due time they had: nothing was written to take them.
    const inFlight = new Set(receiver.requests.map((r) => r.flatHeaders['webhook-id']));
    const pendingInFlight = (await rowsNow(t)).filter((r) => inFlight.has(r.id) && r.status === 'pending');
    expect(pendingInFlight.length).toBeGreaterThan(0);
    for (const row of pendingInFlight) {
      expect(row.attempt).toBe(0);
      expect(row.next_attempt_at).toEqual(before.find((r) => r.id === row.id)!.next_attempt_at);
    }

    await eventually(async () => (await rowsNow(t)).every((r) => r.status === 'success'), 30_000);
    const sent = receiver.requests.map((r) => r.flatHeaders['webhook-id']);
    expect(sent).toHaveLength(40);
    expect(new Set(sent)).toEqual(new Set(before.map((r) => r.id)));
    expect((await rowsNow(t)).every((r) => r.attempt === 1)).toBe(true);
  }, 60_000);

  it.skipIf(ENGINE !== 'pglite')('frees the rows a stopping worker had not started, for the next worker at once', async () => {
    const { t, receiver } = await setup(() => ({ status: 200, delayMs: 300 }));
    await addEndpoint(t, receiver.url);
    for (let i = 0; i < 6; i++) await createProduct(t, `Hat ${i}`);

    const first = testWorker(t, { concurrency: 1 });
    await first.start();
    await receiver.waitFor(1);
    await first.stop();
    const sentByFirst = receiver.requests.length;
    expect(sentByFirst).toBeLessThan(6);

    // With a lease of ten minutes, only rows left as they were can be sent now.
    const second = testWorker(t, { concurrency: 4 });
    await second.start();
    cleanup.push(() => second.stop());
    await eventually(async () => (await rowsNow(t)).every((r) => r.status === 'success'), 15_000);
    const sent = receiver.requests.map((r) => r.flatHeaders['webhook-id']);
    expect(sent).toHaveLength(6);
    expect(new Set(sent).size).toBe(6);
  }, 30_000);
});
