import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../src/lib/config.js';
import { ManualClock, type Clock } from '../../src/lib/clock.js';
import { Outbox } from '../../src/engine/outbox/outbox.js';
import { createProducts, creation } from '../../src/products/create-batch.js';
import { DELIVERY_CHANNEL, HandOff, PER_EVENT } from '../../src/engine/delivery/handoff.js';
import { DeliveryWorker } from '../../src/engine/delivery/worker.js';
import { INITIAL_SHARE, SUSPECT_AFTER_MS } from '../../src/engine/delivery/lane.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { CLAIM, addEndpoint, createProduct, deliveriesOf, eventually, hungBacklog, recordStatements, testWorker } from '../helpers/delivery.js';
import { startReceiver, type Behaviour } from '../helpers/receiver.js';

// Polling is set to an hour: a delivery that arrives came by hand-off or a wake-up, not a poll.
const NO_POLL = { allowPrivateTargets: true, pollIntervalMs: 3_600_000 };

/** An outbox whose next write hands its rows over under `handOff` (made beforehand), as the app's link would. */
function outboxHandingOver(t: TestApp, handOff: HandOff): Outbox {
  return new Outbox(t.ctx.db, { reserve: () => handOff, committed: (...args) => t.ctx.link.committed(...args) }, t.ctx.sequencer);
}

/** Writes deliveries straight to a worker of the same process (src/engine/delivery/handoff.ts). */
describe('direct hand-off of new deliveries', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  async function setup(config: Partial<Config> = NO_POLL, clock?: Clock, script?: (r: unknown, i: number) => Behaviour) {
    const t = await startTestApp({ config, clock });
    cleanup.push(() => t.close());
    const receiver = await startReceiver(script);
    cleanup.push(() => receiver.close());
    return { t, receiver };
  }

  async function started(t: TestApp, concurrency?: number) {
    const worker = testWorker(t, { concurrency });
    await worker.start();
    cleanup.push(() => worker.stop());
    return worker;
  }

  it('sends a change\'s delivery right after its commit, without a claim or a NOTIFY', async () => {
    const { t, receiver } = await setup();
    const { id: endpointId, secret } = await addEndpoint(t, receiver.url);
    const statements = recordStatements(t);
    await started(t);

    const productId = await createProduct(t);
    await receiver.waitFor(1);
    const updated = await t.call(t.demo.workspaces[0].apiKey, 'PATCH', `/v1/products/${productId}`, { name: 'Renamed' });
    expect(updated.statusCode).toBe(200);
    await receiver.waitFor(2);
    await eventually(async () => (await deliveriesOf(t, endpointId)).every((r) => r.status === 'success'));

    const rows = await deliveriesOf(t, endpointId);
    expect(rows.map((r) => [r.event_type, r.attempt])).toEqual([['product.created', 1], ['product.updated', 1]]);
    expect(receiver.requests.map((r) => r.flatHeaders['webhook-id'])).toEqual(rows.map((r) => r.id));
    for (const request of receiver.requests) expect(() => new Webhook(secret).verify(request.body, request.flatHeaders)).not.toThrow();
    // The start-up claim found nothing; no claim took a row and no delivery worker was NOTIFYed
    // (readers of the event stream are, on their own channel).
    expect(statements.filter((s) => CLAIM.test(s.sql) && s.rows > 0)).toEqual([]);
    expect(statements.filter((s) => s.sql.includes('pg_notify') && s.sql.includes(DELIVERY_CHANNEL))).toEqual([]);
  });

  it('hands over every delivery of the first write after a start, before any write has shown its fan-out', async () => {
    const { t, receiver } = await setup();
    // Five endpoints: the first event fans out to five deliveries, more than one per event.
    for (let n = 1; n <= 5; n++) await addEndpoint(t, `${receiver.url}?endpoint=${n}`);
    const statements = recordStatements(t);
    await started(t);

    await createProduct(t);
    await receiver.waitFor(5);
    expect(statements.filter((s) => CLAIM.test(s.sql) && s.rows > 0)).toEqual([]);
  });

  it('leaves what the worker has no room for to claims, and sends every delivery once', async () => {
    const { t, receiver } = await setup();
    // Three endpoints on one receiver: each event fans out to three deliveries.
    const endpoints = await Promise.all([1, 2, 3].map((n) => addEndpoint(t, `${receiver.url}?endpoint=${n}`)));
    const statements = recordStatements(t);
    await started(t, 2);

    const created = await Promise.all(Array.from({ length: 30 }, (_, i) => t.call(t.demo.workspaces[0].apiKey, 'POST', '/v1/products', { name: `Hat ${i}` })));
    expect(created.map((r) => r.statusCode)).toEqual(Array(30).fill(201));
    await eventually(async () => {
      const rows = (await Promise.all(endpoints.map((e) => deliveriesOf(t, e.id)))).flat();
      return rows.length === 90 && rows.every((r) => r.status === 'success');
    });

    const rows = (await Promise.all(endpoints.map((e) => deliveriesOf(t, e.id)))).flat();
    expect(rows.every((r) => r.attempt === 1)).toBe(true);
    const sent = receiver.requests.map((r) => r.flatHeaders['webhook-id']);
    expect(sent).toHaveLength(90);
    expect(new Set(sent)).toEqual(new Set(rows.map((r) => r.id)));
    // Both ways were taken: some rows were claimed, the others were handed over. A row the worker
    // had no place for when claimed is claimed again later, so rows are counted, not claims.
    const claimed = new Set(statements.filter((s) => CLAIM.test(s.sql)).flatMap((s) => s.ids));
    expect(claimed.size).toBeGreaterThan(0);
    expect(claimed.size).toBeLessThan(90);
  });

  it('lets any worker take handed rows once their lease runs out, if the process dies before sending them', async () => {
    const clock = new ManualClock();
    const { t, receiver } = await setup({ allowPrivateTargets: true }, clock);
    const { id: endpointId } = await addEndpoint(t, receiver.url);
    // The write commits its delivery already claimed for a worker that never sends it: the state a
    // process leaves when it dies between the commit and the attempt.
    const dead = { wake() {}, reserve: () => 1, receive() {}, deferrals: () => [], deferredRows() {} };
    const handOff = new HandOff(new Date(clock.now().getTime() + t.ctx.config.leaseMs), 1, dead);
    const [created] = await outboxHandingOver(t, handOff).write<{ id: string }>(createProducts([creation(t.demo.workspaces[0].id, { name: 'Hat' }, clock.now())]));
    expect(created.id).toMatch(/^prd_/);
    const [handed] = await deliveriesOf(t, endpointId);
    expect(handed.next_attempt_at!.getTime()).toBe(clock.now().getTime() + t.ctx.config.leaseMs);

    const other = testWorker(t);
    cleanup.push(() => other.stop());
    expect(await other.runDue()).toBe(0);
    clock.advance(t.ctx.config.leaseMs - 1);
    expect(await other.runDue()).toBe(0);
    clock.advance(1);
    expect(await other.runDue()).toBe(1);

    const [row] = await deliveriesOf(t, endpointId);
    expect(row).toMatchObject({ status: 'success', attempt: 1 });
    expect(receiver.requests.map((r) => r.flatHeaders['webhook-id'])).toEqual([row.id]);
  });

  it('has stop() wait for a write holding slots, then hand its rows back due now', async () => {
    const { t, receiver } = await setup();
    const { id: endpointId } = await addEndpoint(t, receiver.url);
    const worker = new DeliveryWorker(t.ctx);
    await worker.start();
    // One event, before any write has shown its fan-out: PER_EVENT places.
    const handOff = t.ctx.link.reserve(1)!;
    expect(handOff.slots).toBe(PER_EVENT);

    let stopped = false;
    const stopping = worker.stop().then(() => (stopped = true));
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The write holding a slot has not returned: stop() waits for it.
    expect(stopped).toBe(false);
    await outboxHandingOver(t, handOff).write(createProducts([creation(t.demo.workspaces[0].id, { name: 'Hat' }, new Date())]));
    await stopping;

    const [delivery] = await deliveriesOf(t, endpointId);
    expect(delivery).toMatchObject({ status: 'pending', attempt: 0 });
    expect(new Date(delivery.next_attempt_at!).getTime()).toBeLessThanOrEqual(Date.now());
    expect(receiver.requests).toHaveLength(0);
  });

  it('reserves at most the worker\'s free room, and frees the room of a write that failed', async () => {
    const { t } = await setup();
    await addEndpoint(t, 'https://example.com/hook');
    await started(t, 2);
    // A capacity of two, nothing in flight: room for two, which would start at once.
    const first = t.ctx.link.reserve(100)!;
    expect(first.slots).toBe(2);
    expect(t.ctx.link.reserve(1)).toBeNull();
    first.cancel();
    const again = t.ctx.link.reserve(1)!;
    expect(again.slots).toBe(2);
    again.cancel();
  });

  it('takes hand-offs while the jobs of hanging endpoints never heard from wait for their probes', async () => {
    const { t } = await setup();
    const hung = await startReceiver(() => ({ hang: true }));
    cleanup.push(() => hung.close());
    // Ten endpoints that never answer, thirty rows due each, in turn: the first claim leaves their
    // jobs waiting beside their probes, more of them than the room a worker keeps ahead.
    await hungBacklog(t, hung.url, 10, 30);
    const worker = await started(t);
    await hung.waitFor(10 * INITIAL_SHARE);
    expect(worker.pending().inFlight).toBe(10 * INITIAL_SHARE);
    // A write of this process still gets room to hand its rows over.
    const handOff = t.ctx.link.reserve(1);
    expect(handOff?.slots).toBe(PER_EVENT);
    handOff!.cancel();
    hung.release({ status: 200 });
  });

  it('writes the new rows of a hanging endpoint deferred, rather than hand them over to be deferred one by one', async () => {
    const { t, receiver } = await setup();
    const hung = await startReceiver(() => ({ hang: true }));
    cleanup.push(() => hung.close());
    const [hungId] = await hungBacklog(t, hung.url, 1, 30);
    const { id: healthyId } = await addEndpoint(t, receiver.url);
    await started(t);
    cleanup.push(async () => hung.release({ status: 200 }));
    await hung.waitFor(INITIAL_SHARE);
    // Past the verdict: the probes have run unanswered for longer than SUSPECT_AFTER_MS. The next
    // write's row for the endpoint is handed over and deferred; its lane now defers every job.
    await new Promise((resolve) => setTimeout(resolve, SUSPECT_AFTER_MS + 200));
    await createProduct(t);
    await receiver.waitFor(1);
    const settled = async () => {
      await eventually(async () => (await deliveriesOf(t, healthyId)).every((r) => r.status === 'success'));
      await new Promise((resolve) => setTimeout(resolve, 300));
    };
    await settled();

    const statements = recordStatements(t);
    const since = new Date();
    await createProduct(t);
    await receiver.waitFor(2);
    await settled();
    const [deferred] = (await deliveriesOf(t, hungId)).filter((r) => r.created_at >= since);
    expect(deferred).toMatchObject({ status: 'pending', attempt: 0 });
    // Due at the lane's pace, a probe's time (over a second) after everything deferred so far.
    expect(deferred.next_attempt_at!.getTime() - since.getTime()).toBeGreaterThan(SUSPECT_AFTER_MS);
    // One outcome written since: the healthy endpoint's. The deferred row was written once, by the write.
    const outcomes = statements.filter((s) => /^\s*WITH o AS/.test(s.sql));
    expect(outcomes.reduce((sum, s) => sum + s.rows, 0)).toBe(1);
    expect(hung.requests.length).toBe(INITIAL_SHARE);
  });

  it('hands nothing over, and wakes workers, when no worker runs in the process', async () => {
    const { t, receiver } = await setup();
    const { id: endpointId } = await addEndpoint(t, receiver.url);
    expect(t.ctx.link.reserve(1)).toBeNull();
    await createProduct(t);
    const [row] = await deliveriesOf(t, endpointId);
    expect(row).toMatchObject({ status: 'pending', attempt: 0 });
    expect(new Date(row.next_attempt_at!).getTime()).toBe(new Date(row.created_at).getTime());
    // A worker of another process would be woken by NOTIFY; here one started later finds the row.
    await started(t);
    await receiver.waitFor(1);
    expect(receiver.requests[0].flatHeaders['webhook-id']).toBe(row.id);
  });
});
