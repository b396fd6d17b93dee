import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { DeliveryWorker } from '../../src/engine/delivery/worker.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createProduct, deliveriesOf } from '../helpers/delivery.js';
import { startReceiver, type ReceivedRequest, type Receiver } from '../helpers/receiver.js';

const MINUTE = 60_000;

/** What a receiver got, as `<event type> <subject id>` in arrival order. */
const seen = (requests: ReceivedRequest[]) =>
  requests.map((r) => {
    const body = JSON.parse(r.body) as { type: string; subject?: { id: string } };
    return `${body.type} ${body.subject?.id}`;
  });

describe('ordering by subject', () => {
  let t: TestApp;
  let clock: ManualClock;
  let key: string;
  let receiver: Receiver;
  /** Subjects whose deliveries the receiver answers with 500 (`<type> <subject>` for one event type only). */
  const failing = new Set<string>();

  beforeAll(async () => {
    clock = new ManualClock();
    // Three attempts a minute apart: a delivery fails for good two minutes after its first attempt.
    t = await startTestApp({ clock, config: { allowPrivateTargets: true, deliveryTimeoutMs: 2_000, retryScheduleMs: [MINUTE, MINUTE] } });
    key = t.demo.workspaces[0].apiKey;
    receiver = await startReceiver((request) => {
      const { type, subject } = JSON.parse(request.body) as { type: string; subject?: { id: string } };
      const fails = subject && (failing.has(subject.id) || failing.has(`${type} ${subject.id}`));
      return fails ? { status: 500, body: 'not now' } : { status: 200 };
    });
  });
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  const worker = () =>
    new DeliveryWorker(t.ctx, {
      onError: (error, during) => {
        throw new Error(`worker ${during} failed: ${(error as Error).message}`);
      },
    });

  /** An endpoint of its own for one scenario; the previous scenario's is deleted so it gets nothing more. */
  let current: string | null = null;
  async function endpoint(ordering: 'none' | 'subject'): Promise<string> {
    if (current) expect((await t.call(key, 'DELETE', `/v1/webhooks/endpoints/${current}`)).statusCode).toBe(200);
    const res = await t.call(key, 'POST', '/v1/webhooks/endpoints', { url: receiver.url, subscribedEvents: ['product.*'], ordering });
    expect(res.statusCode).toBe(201);
    expect(res.json().ordering).toBe(ordering);
    current = res.json().id;
    receiver.requests.length = 0;
    return current!;
  }
  const rename = async (productId: string, name: string) =>
    expect((await t.call(key, 'PATCH', `/v1/products/${productId}`, { name })).statusCode).toBe(200);

  it('holds the later events of a failing subject while other subjects go through, then sends them in order', async () => {
    const endpointId = await endpoint('subject');
    const x = await createProduct(t, `X`);
    const y = await createProduct(t, `Y`);
    await rename(x, 'X renamed');
    clock.advance(1);
    await rename(x, 'X renamed again');
    failing.add(x);

    const w = worker();
    await w.runDue();
    // Two subjects, sent side by side: in either order.
    expect(seen(receiver.requests).sort()).toEqual([`product.created ${x}`, `product.created ${y}`].sort());
    const waiting = (await deliveriesOf(t, endpointId)).filter((d) => d.event_type === 'product.updated');
    expect(waiting.map((d) => [d.status, d.attempt])).toEqual([
      ['pending', 0],
      ['pending', 0],
    ]);

    // The retry fails again: the updates still wait, however long they have been due.
    clock.advance(MINUTE);
    await w.runDue();
    expect(receiver.requests).toHaveLength(3);
    expect(seen(receiver.requests)[2]).toBe(`product.created ${x}`);

    // The receiver recovers: the held delivery succeeds, then the others follow one by one, in order.
    failing.delete(x);
    clock.advance(MINUTE);
    await w.runDue();
    await w.stop();
    expect(seen(receiver.requests).slice(3)).toEqual([`product.created ${x}`, `product.updated ${x}`, `product.updated ${x}`]);
    // The two updates, in the order they were made.
    const updates = await t.ctx.db.query<{ id: string }>(`SELECT id FROM events WHERE subject_id = $1 AND type = 'product.updated' ORDER BY created_at`, [x]);
    expect(receiver.requests.slice(4).map((r) => JSON.parse(r.body).id)).toEqual(updates.map((e) => e.id));
    expect((await deliveriesOf(t, endpointId)).map((d) => d.status)).toEqual(['success', 'success', 'success', 'success']);

  });

  it('lets the next delivery go once the one ahead has failed for good', async () => {
    const endpointId = await endpoint('subject');
    const x = await createProduct(t, `Doomed`);
    await rename(x, 'Doomed, renamed');
    failing.add(`product.created ${x}`);
    const w = worker();
    for (let i = 0; i < 2; i++) {
      await w.runDue();
      expect(seen(receiver.requests)).toEqual(Array(i + 1).fill(`product.created ${x}`));
      clock.advance(MINUTE);
    }
    // The third attempt is the last: the creation fails for good and the update goes at once.
    await w.runDue();
    await w.stop();
    expect(seen(receiver.requests)).toEqual([...Array(3).fill(`product.created ${x}`), `product.updated ${x}`]);
    const statuses = Object.fromEntries((await deliveriesOf(t, endpointId)).map((d) => [d.event_type, d.status]));
    expect(statuses).toEqual({ 'product.created': 'failed', 'product.updated': 'success' });

  });

  it('gives the replays of a bulk recovery their subject, so they queue behind it', async () => {
    const endpointId = await endpoint('subject');
    const x = await createProduct(t, 'Recovered');
    failing.add(`product.created ${x}`);
    const w = worker();
    for (let i = 0; i < 3; i++) {
      await w.runDue();
      clock.advance(MINUTE);
    }
    await w.stop();
    expect((await deliveriesOf(t, endpointId)).map((d) => d.status)).toEqual(['failed']);
    const since = new Date(clock.now().getTime() - 60 * MINUTE).toISOString();
    const res = await t.call(key, 'POST', `/v1/webhooks/endpoints/${endpointId}/recover`, { since });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({ status: 'completed', replayed: 1 });
    const rows = await t.ctx.db.query<{ ordering_key: string | null }>(
      'SELECT ordering_key FROM webhook_deliveries WHERE endpoint_id = $1 AND replay_of IS NOT NULL',
      [endpointId],
    );
    expect(rows).toEqual([{ ordering_key: x }]);
  });

  it('leaves an endpoint without ordering unaffected: its rows carry no ordering key and nothing waits', async () => {
    const endpointId = await endpoint('none');
    const x = await createProduct(t, 'Unordered');
    await rename(x, 'Unordered, renamed');
    failing.add(x);
    const w = worker();
    await w.runDue();
    await w.stop();
    failing.delete(x);
    // Both go in the same round, in parallel, the creation failing.
    expect(seen(receiver.requests).sort()).toEqual([`product.created ${x}`, `product.updated ${x}`]);
    const rows = await t.ctx.db.query<{ ordering_key: string | null; ordering_seq: string | null }>(
      'SELECT ordering_key, ordering_seq FROM webhook_deliveries WHERE endpoint_id = $1',
      [endpointId],
    );
    expect(rows).toEqual([
      { ordering_key: null, ordering_seq: null },
      { ordering_key: null, ordering_seq: null },
    ]);
  });

  it('releases what waits when ordering is turned off, and queues a replay behind its subject', async () => {
    const endpointId = await endpoint('subject');
    const x = await createProduct(t, 'Switched');
    await rename(x, 'Switched, renamed');
    failing.add(x);
    const w = worker();
    await w.runDue();
    expect(seen(receiver.requests)).toEqual([`product.created ${x}`]);

    // A replay of the failing creation queues behind the pending deliveries of its subject.
    const created = (await deliveriesOf(t, endpointId)).find((d) => d.event_type === 'product.created')!;
    const replay = await t.call(key, 'POST', `/v1/webhooks/deliveries/${created.id}/replay`);
    expect(replay.statusCode).toBe(201);
    const replayId = replay.json().delivery.id;
    const [replayRow] = await t.ctx.db.query<{ ordering_key: string }>('SELECT ordering_key FROM webhook_deliveries WHERE id = $1', [replayId]);
    expect(replayRow.ordering_key).toBe(x);
    await w.runDue();
    expect(receiver.requests).toHaveLength(1);

    // Turning ordering off lets everything go at once.
    const off = await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${endpointId}`, { ordering: 'none' });
    expect(off.json().ordering).toBe('none');
    failing.delete(x);
    await w.runDue();
    await w.stop();
    expect(seen(receiver.requests).slice(1).sort()).toEqual([`product.created ${x}`, `product.updated ${x}`].sort());
    expect((await deliveriesOf(t, endpointId)).find((d) => d.id === replayId)!.status).toBe('success');
  });
});

describe('ordering by subject with a running worker', () => {
  let t: TestApp;
  let ordered: Receiver;
  let unordered: Receiver;
  let worker: DeliveryWorker;
  beforeAll(async () => {
    // The system clock, a retry an hour away: within this test a failed delivery stays failing.
    t = await startTestApp({ config: { allowPrivateTargets: true, retryScheduleMs: [3_600_000] } });
    ordered = await startReceiver((request) => (JSON.parse(request.body).type === 'product.created' ? { status: 500 } : { status: 200 }));
    unordered = await startReceiver();
    worker = new DeliveryWorker(t.ctx, {
      onError: (error, during) => {
        throw new Error(`worker ${during} failed: ${(error as Error).message}`);
      },
    });
    await worker.start();
  });
  afterAll(async () => {
    await worker?.stop();
    await ordered?.close();
    await unordered?.close();
    await t?.close();
  });

  it('never hands a new delivery of a waiting subject straight to the worker', async () => {
    const key = t.demo.workspaces[0].apiKey;
    for (const [receiver, ordering] of [
      [ordered, 'subject'],
      [unordered, 'none'],
    ] as const) {
      const res = await t.call(key, 'POST', '/v1/webhooks/endpoints', { url: receiver.url, subscribedEvents: ['product.*'], ordering });
      expect(res.statusCode).toBe(201);
    }
    const x = await createProduct(t, 'Handed');
    await ordered.waitFor(1);
    await unordered.waitFor(1);
    // The update's two deliveries are written by one statement, which may hand them to the worker:
    // the unordered one goes, the ordered one waits behind the failed creation.
    expect((await t.call(key, 'PATCH', `/v1/products/${x}`, { name: 'Handed, renamed' })).statusCode).toBe(200);
    await unordered.waitFor(2);
    // Had the ordered one been handed over, it would have gone out beside the unordered one.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(ordered.requests.map((r) => JSON.parse(r.body).type)).toEqual(['product.created']);
    const [waiting] = await t.ctx.db.query<{ status: string; attempt: number }>(
      `SELECT d.status, d.attempt FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
        WHERE e.ordering = 'subject' AND d.event_type = 'product.updated'`,
    );
    expect(waiting).toEqual({ status: 'pending', attempt: 0 });
  });
});
