import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../src/lib/config.js';
import { runAttempt } from '../../src/engine/delivery/attempt.js';
import { claimLocked } from '../../src/engine/delivery/claim.js';
import { HOLD_MS, Hold } from '../../src/engine/delivery/hold.js';
import type { Job, Outcome, Holding } from '../../src/engine/delivery/job.js';
import { recordOutcomes, writeHeldOutcomes } from '../../src/engine/delivery/outcome.js';
import { createSender } from '../../src/engine/destinations/destinations.js';
import { DeliveryWorker } from '../../src/engine/delivery/worker.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { addEndpoint, createProduct, deliveriesOf, eventually } from '../helpers/delivery.js';
import { startReceiver, type Behaviour } from '../helpers/receiver.js';

/** The backend process of every transaction the app's database opens from now on (holds). */
function backendsOfOpenTransactions(t: TestApp): number[] {
  const pids: number[] = [];
  const begin = t.ctx.db.begin.bind(t.ctx.db);
  t.ctx.db.begin = async (settings) => {
    const tx = await begin(settings);
    const [{ pid }] = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    pids.push(pid);
    return tx;
  };
  return pids;
}

/** A hold that writes nothing, for claims made by hand. */
const NO_LOCK: Holding = { finish() {}, drop() {} };

describe('holds: claims under row locks', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  async function setup(config: Partial<Config>, script: (r: unknown, i: number) => Behaviour) {
    const t = await startTestApp({ config: { allowPrivateTargets: true, ...config } });
    cleanup.push(() => t.close());
    const receiver = await startReceiver(script);
    cleanup.push(() => receiver.close());
    const { id: endpointId } = await addEndpoint(t, receiver.url);
    return { t, receiver, endpointId };
  }

  function started(t: TestApp, concurrency: number, errors: string[] = []): DeliveryWorker {
    const worker = new DeliveryWorker(t.ctx, { concurrency, onError: (error, during) => errors.push(`${during}: ${(error as Error).message}`) });
    cleanup.push(() => worker.stop());
    return worker;
  }

  /** A hold opened by hand, whose outcomes to record and ended() calls are kept. */
  async function openHold(t: TestApp, unstarted: () => Job[] = () => [], onError: (error: unknown) => void = () => {}) {
    const recorded: Outcome[] = [];
    const ended: number[] = [];
    const deps = { db: t.ctx.db, clock: t.clock, leaseMs: t.ctx.config.leaseMs };
    const handlers = { unstarted, record: (outcomes: Outcome[]) => recorded.push(...outcomes), ended: (_hold: Hold, freed: number) => ended.push(freed), onError };
    const { hold, jobs } = await Hold.claim(deps, handlers, t.clock.now(), 10, null);
    if (!hold) throw new Error('nothing was due');
    return { hold, jobs, recorded, ended };
  }

  /** Rows another worker can claim now (none of those a hold keeps). */
  async function claimableElsewhere(t: TestApp): Promise<Job[]> {
    const tx = await t.ctx.db.begin(Hold.SETTINGS);
    try {
      return await claimLocked(tx, NO_LOCK, t.clock.now(), 10);
    } finally {
      await tx.rollback();
    }
  }

  it('takes rows without writing them; at its end leases the jobs in flight, frees those not started and writes the others', async () => {
    const { t, endpointId } = await setup({}, () => ({ status: 200 }));
    for (let i = 0; i < 3; i++) await createProduct(t, `Hat ${i}`);
    const due = await deliveriesOf(t, endpointId);
    const sender = createSender(t.ctx.config);
    cleanup.push(() => sender.close());
    let notStarted: Job[] = [];
    const { hold, jobs, recorded, ended } = await openHold(t, () => notStarted);
    expect(jobs.map((j) => j.id).sort()).toEqual(due.map((r) => r.id).sort());

    // Held, not written: every row is as the fan-out left it, and no other claim can take one.
    expect((await deliveriesOf(t, endpointId)).map((r) => [r.status, r.next_attempt_at])).toEqual(due.map((r) => ['pending', r.next_attempt_at]));
    expect(await claimableElsewhere(t)).toEqual([]);

    // The first job is answered, the second is in flight, the third never started.
    const [answered, inFlight, idle] = jobs;
    hold.finish(answered, await runAttempt({ ...t.ctx, sender }, answered));
    notStarted = [idle];
    await hold.end();

    const rows = new Map((await deliveriesOf(t, endpointId)).map((r) => [r.id, r]));
    expect(rows.get(answered.id)).toMatchObject({ status: 'success', attempt: 1 });
    expect(rows.get(inFlight.id)!.next_attempt_at!.getTime()).toBeGreaterThanOrEqual(rows.get(inFlight.id)!.created_at.getTime() + t.ctx.config.leaseMs);
    expect(rows.get(idle.id)).toMatchObject({ status: 'pending', attempt: 0, next_attempt_at: rows.get(idle.id)!.created_at });
    expect([recorded, ended]).toEqual([[], [1]]);
    // The job in flight goes on under its lease: its outcome, given to the hold after the commit,
    // is handed on to be recorded under the lease.
    hold.finish(inFlight, await runAttempt({ ...t.ctx, sender }, inFlight));
    expect(recorded).toHaveLength(1);
    expect(recorded[0].mark).toEqual(rows.get(inFlight.id)!.next_attempt_at);
    await recordOutcomes(t.ctx, recorded);
    expect((await deliveriesOf(t, endpointId)).find((r) => r.id === inFlight.id)).toMatchObject({ status: 'success', attempt: 1, next_attempt_at: null });
  });

  it('claims the due rows in (due time, id) order, as many as asked, each once', async () => {
    const { t, endpointId } = await setup({}, () => ({ status: 200 }));
    for (let i = 0; i < 4; i++) await createProduct(t, `Hat ${i}`);
    const [a, b, c, d] = (await deliveriesOf(t, endpointId)).map((r) => r.id).sort();
    // c and d are due first, at the same time, so their ids order them; a and b a millisecond later.
    const first = new Date(t.clock.now().getTime() - 1_000);
    const next = new Date(first.getTime() + 1);
    await t.ctx.db.query(
      `UPDATE webhook_deliveries SET next_attempt_at = CASE WHEN id IN ($1, $2) THEN $3::timestamptz ELSE $4::timestamptz END WHERE endpoint_id = $5`,
      [c, d, first, next, endpointId],
    );
    const tx = await t.ctx.db.begin(Hold.SETTINGS);
    const taken = await claimLocked(tx, NO_LOCK, t.clock.now(), 3);
    expect(taken.map((j) => [j.id, j.mark.getTime()])).toEqual([[c, first.getTime()], [d, first.getTime()], [a, next.getTime()]]);
    // Another claim meanwhile takes what is left.
    expect((await claimableElsewhere(t)).map((j) => j.id)).toEqual([b]);
    await tx.rollback();
  });

  it('gives every claimed job its own endpoint, however the rows of several endpoints interleave', async () => {
    const { t, receiver, endpointId } = await setup({}, () => ({ status: 200 }));
    const other = await addEndpoint(t, `${receiver.url}/other`);
    await t.ctx.db.query('UPDATE webhook_endpoints SET consecutive_failures = 3 WHERE id = $1', [other.id]);
    for (let i = 0; i < 3; i++) await createProduct(t, `Hat ${i}`);
    // The two endpoints' rows alternate in the due order: this one's, the other's, this one's...
    const first = new Date(t.clock.now().getTime() - 1_000);
    await t.ctx.db.query(
      `UPDATE webhook_deliveries d SET next_attempt_at = $1::timestamptz + make_interval(secs => r.place / 1000.0)
         FROM (SELECT id, 2 * (row_number() OVER (PARTITION BY endpoint_id ORDER BY id) - 1) + CASE WHEN endpoint_id = $2 THEN 1 ELSE 0 END AS place
                 FROM webhook_deliveries) r
        WHERE d.id = r.id`,
      [first, other.id],
    );
    const endpoints = await t.ctx.db.query<{ id: string; url: string; secret_enc: string; consecutive_failures: number }>(
      'SELECT id, url, secret_enc, consecutive_failures FROM webhook_endpoints WHERE id = ANY($1::text[])',
      [[endpointId, other.id]],
    );
    const tx = await t.ctx.db.begin(Hold.SETTINGS);
    const taken = await claimLocked(tx, NO_LOCK, t.clock.now(), 10);
    await tx.rollback();
    expect(taken.map((j) => j.endpointId)).toEqual([endpointId, other.id, endpointId, other.id, endpointId, other.id]);
    for (const job of taken) {
      const endpoint = endpoints.find((e) => e.id === job.endpointId)!;
      expect([job.url, job.secretEnc, job.endpointFailures, job.endpointActive]).toEqual([endpoint.url, endpoint.secret_enc, endpoint.consecutive_failures, true]);
    }
  });

  it('writes an outcome that arrives while the claim commits under the lease the commit wrote, not under the old mark', async () => {
    const { t, endpointId } = await setup({}, () => ({ status: 200 }));
    for (let i = 0; i < 2; i++) await createProduct(t, `Hat ${i}`);
    const sender = createSender(t.ctx.config);
    cleanup.push(() => sender.close());
    const { hold, jobs, recorded, ended } = await openHold(t);
    const [first, second] = jobs;
    hold.finish(first, await runAttempt({ ...t.ctx, sender }, first));
    const late = await runAttempt({ ...t.ctx, sender }, second);

    // The hold ends with the second job in flight; its answer arrives while the commit is under way.
    const ending = hold.end();
    hold.finish(second, late);
    await ending;
    expect(ended).toHaveLength(1);
    expect(recorded.map((o) => o.id)).toEqual([second.id]);
    const [row] = (await deliveriesOf(t, endpointId)).filter((r) => r.id === second.id);
    expect(recorded[0].mark).toEqual(row.next_attempt_at);

    await recordOutcomes(t.ctx, recorded);
    expect((await deliveriesOf(t, endpointId)).every((r) => r.status === 'success' && r.attempt === 1)).toBe(true);
  });

  it('writes the outcomes of a claim whose commit failed under the rows\' own due times, without sending them again', async () => {
    const { t, endpointId } = await setup({}, () => ({ status: 200 }));
    await createProduct(t, 'Hat');
    const sender = createSender(t.ctx.config);
    cleanup.push(() => sender.close());
    const errors: unknown[] = [];
    const { hold, jobs, recorded } = await openHold(t, () => [], (error) => void errors.push(error));
    const [job] = jobs;
    const outcome = await runAttempt({ ...t.ctx, sender }, job);
    // The hold's connection goes away before it can write.
    const [{ pid }] = await hold.tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    await t.ctx.db.query('SELECT pg_terminate_backend($1)', [pid]);
    hold.finish(job, outcome);
    await hold.end();
    expect(errors).toHaveLength(1);
    expect(recorded).toEqual([outcome]);
    // Written as the recorder writes it: tried again while the database is briefly taken for down.
    await eventually(async () => recordOutcomes(t.ctx, recorded).then(() => true, () => false));
    expect((await deliveriesOf(t, endpointId))[0]).toMatchObject({ status: 'success', attempt: 1 });
  });

  it('claims the rows a hold gave back again at once, not at the next poll', async () => {
    const { t, receiver, endpointId } = await setup({ pollIntervalMs: 3_600_000 }, () => ({ hang: true }));
    for (let i = 0; i < 3; i++) await createProduct(t, `Hat ${i}`);
    // The claim takes all three rows, fewer than it had room for; the endpoint, never heard from,
    // gets one probe and the others wait.
    const worker = started(t, 2);
    await worker.start();
    await receiver.waitFor(1);
    // The hold ends: the probe goes on under a lease, the rows not started are given back, taken
    // again at once and, their endpoint hanging, deferred.
    await eventually(async () => (await deliveriesOf(t, endpointId)).filter((r) => r.next_attempt_at!.getTime() > r.created_at.getTime()).length === 3, HOLD_MS * 10);

    receiver.respond(() => ({ status: 200 }));
    receiver.release({ status: 200 });
    await eventually(async () => (await deliveriesOf(t, endpointId)).every((r) => r.status === 'success'), 20_000);
    expect(receiver.requests).toHaveLength(3);
  }, 40_000);

  it('claims a full round at a time while busy, not the room each finished attempt leaves', async () => {
    // Answers staggered over 5-50 ms, so requests finish one by one.
    const { t, endpointId } = await setup({ pollIntervalMs: 3_600_000 }, (_r, i) => ({ status: 200, delayMs: 5 + (i % 4) * 15 }));
    for (let i = 0; i < 24; i++) await createProduct(t, `Hat ${i}`);
    const claims: number[] = [];
    const claimed = new Set<string>();
    const begin = t.ctx.db.begin.bind(t.ctx.db);
    t.ctx.db.begin = async (settings) => {
      const tx = await begin(settings);
      const query = tx.query.bind(tx);
      tx.query = async <T,>(sql: string, params?: unknown[]) => {
        const rows = await query<T>(sql, params);
        if (sql.includes('FOR UPDATE SKIP LOCKED') && rows.length > 0) {
          claims.push(rows.length);
          for (const row of rows as { id: string }[]) claimed.add(row.id);
        }
        return rows;
      };
      return tx;
    };
    const worker = started(t, 4);
    await worker.start();
    await eventually(async () => (await deliveriesOf(t, endpointId)).every((r) => r.status === 'success'));

    // The first claim fills the capacity and two rounds ahead; each later one waits for a round of
    // room. A hold that ends before its last jobs started frees them for the next one (a slow machine
    // can take longer than the hold to start a round), so a row may be claimed twice, never sent twice.
    expect(claims[0]).toBe(12);
    expect(claimed.size).toBe(24);
    expect(claims.slice(0, -1).every((n) => n >= 4)).toBe(true);
  });

  it('names, of a batch of held outcomes, only the endpoints whose failure count a success must reset', async () => {
    const { t, endpointId } = await setup({}, () => ({ status: 200 }));
    const other = await startReceiver(() => ({ status: 200 }));
    cleanup.push(() => other.close());
    const { id: otherId } = await addEndpoint(t, other.url);
    for (let i = 0; i < 3; i++) await createProduct(t, `Hat ${i}`);
    const sender = createSender(t.ctx.config);
    cleanup.push(() => sender.close());
    const tx = await t.ctx.db.begin(Hold.SETTINGS);
    const rows = await claimLocked(tx, NO_LOCK, t.clock.now(), 10);
    expect(new Set(rows.map((r) => r.endpointId))).toEqual(new Set([endpointId, otherId]));
    // Another worker records failures for one endpoint after the claim read a count of 0.
    await t.ctx.db.query('UPDATE webhook_endpoints SET consecutive_failures = 3 WHERE id = $1', [endpointId]);
    const outcomes = await Promise.all(rows.map((row) => runAttempt({ ...t.ctx, sender }, row)));
    expect(outcomes.every((o) => o.status === 'success')).toBe(true);

    expect(await writeHeldOutcomes(tx, outcomes)).toEqual([endpointId]);
    await tx.commit();
    expect((await deliveriesOf(t, endpointId)).every((r) => r.status === 'success')).toBe(true);
    expect((await deliveriesOf(t, otherId)).every((r) => r.status === 'success')).toBe(true);
  });

  it('sends the rows of a hold whose connection was lost again, and goes on', async () => {
    // The hold's backend goes away as the first attempt arrives, as soon after the claim as can be,
    // so well within the hold's time even on a loaded machine; nothing of the hold was written.
    let terminated: Promise<unknown> | null = null;
    const { t, receiver, endpointId } = await setup({ pollIntervalMs: 50 }, (_, i) => {
      if (i === 0) terminated = t.ctx.db.query('SELECT pg_terminate_backend($1)', [backends[0]]);
      return { hang: true };
    });
    await createProduct(t, 'Hat 1');
    await createProduct(t, 'Hat 2');
    const backends = backendsOfOpenTransactions(t);
    const errors: string[] = [];
    const worker = started(t, 4, errors);
    await worker.start();
    await receiver.waitFor(2);
    await terminated;
    receiver.respond(() => ({ status: 200 }));
    receiver.release({ status: 200 });

    await eventually(async () => (await deliveriesOf(t, endpointId)).every((r) => r.status === 'success'));
    expect(errors.some((e) => e.startsWith('record: ')), errors.join('; ')).toBe(true);
    const rows = await deliveriesOf(t, endpointId);
    expect(rows.every((r) => r.attempt === 1)).toBe(true);
    // At-least-once after a fault: a row taken again before its first outcome was written is sent
    // twice, with the same webhook-id; never more.
    const sent = receiver.requests.map((r) => r.flatHeaders['webhook-id']);
    for (const row of rows) expect([1, 2]).toContain(sent.filter((id) => id === row.id).length);
    expect(sent.every((id) => rows.some((r) => r.id === id))).toBe(true);
  });
});
