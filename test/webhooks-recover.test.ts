import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/lib/ids.js';
import type { DeliveryWorker } from '../src/webhooks/engine/worker.js';
import { RecoveryRunner } from '../src/webhooks/recoveries/runner.js';
import { claimRecovery, runBatch } from '../src/webhooks/recoveries/store.js';
import { ManualClock, startTestApp, type TestApp } from './helpers/app.js';
import { addEndpoint, createProduct, deliveriesOf, eventually, testWorker } from './helpers/delivery.js';
import { expectError } from './helpers/expect.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { snapshot } from './helpers/security.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

interface Recovery {
  object: string;
  id: string;
  endpointId: string;
  since: string;
  until: string;
  statuses: string[];
  status: 'running' | 'completed' | 'failed';
  count: number;
  replayed: number;
  skipped: number;
  error: string | null;
  createdAt: string;
  completedAt: string | null;
}

/**
 * POST /webhooks/endpoints/{endpointId}/recover (DESIGN "The delivery log and recovery"): a dry run
 * counts, a real run replays the failed and disabled deliveries of a window in the background, batch
 * by batch, and a second run sends nothing twice. Time runs on a manual clock set near the real time,
 * so that receivers verify the signatures of what the worker sends.
 */
describe('bulk recovery of webhook deliveries', () => {
  let t: TestApp;
  let receiver: Receiver;
  let key: string;
  let ws: string;
  let endpoint: { id: string; secret: string };
  let worker: DeliveryWorker | null = null;
  const clock = new ManualClock(Date.now() - 6 * HOUR);

  const recover = (endpointId: string, body: unknown, token = key) => t.call(token, 'POST', `/v1/webhooks/endpoints/${endpointId}/recover`, body);
  const getRecovery = async (id: string): Promise<Recovery> => {
    const res = await t.call(key, 'GET', `/v1/webhooks/recoveries/${id}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  const finished = async (id: string): Promise<Recovery> => {
    let last: Recovery | null = null;
    await eventually(async () => (last = await getRecovery(id)).status !== 'running', 60_000);
    return last!;
  };
  const setStatus = (ids: string[], status: string) =>
    t.ctx.db.query(`UPDATE webhook_deliveries SET status = $2, next_attempt_at = NULL, attempt = 11 WHERE id = ANY($1::text[])`, [ids, status]);
  const replaysOf = (endpointId: string) =>
    t.ctx.db.query<{ id: string; replay_of: string; payload: string; status: string }>(
      'SELECT id, replay_of, payload, status FROM webhook_deliveries WHERE endpoint_id = $1 AND replay_of IS NOT NULL ORDER BY id',
      [endpointId],
    );
  /** `n` finished deliveries of an endpoint made at the clock's time, written directly: a body each, as pings and replays carry. */
  const seed = async (endpointId: string, n: number, status = 'failed'): Promise<string[]> => {
    const now = clock.now();
    const ids = Array.from({ length: n }, () => newId('whd', now));
    await t.ctx.db.query(
      `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, payload, status, attempt, created_at)
       SELECT d.id, $2, $3, 'evt_' || substr(d.id, 5), 'webhook.ping', json_build_object('seed', d.id)::text, $4, 11, $5
         FROM unnest($1::text[]) AS d (id)`,
      [ids, ws, endpointId, status, now],
    );
    return ids;
  };

  beforeAll(async () => {
    t = await startTestApp({ clock, config: { allowPrivateTargets: true, retentionMs: 30 * DAY, pollIntervalMs: 60_000, rateLimitApiKey: 1_000_000 } });
    receiver = await startReceiver();
    key = t.demo.workspaces[0].apiKey;
    ws = t.demo.workspaces[0].id;
    endpoint = await addEndpoint(t, `${receiver.url}/hooks`);
  });
  afterAll(async () => {
    await worker?.stop();
    await receiver?.close();
    await t?.close();
  });

  describe('one window of one endpoint', () => {
    let since: string;
    let until: string;
    /** The failed and disabled deliveries inside the window, by status. */
    const inside: Record<'failed' | 'disabled', string[]> = { failed: [], disabled: [] };
    let recoveryId: string;
    let afterId: string;

    beforeAll(async () => {
      // Before the window: a failed delivery that stays as it is.
      await createProduct(t, 'Before');
      clock.advance(HOUR);
      since = clock.now().toISOString();
      for (const name of ['a', 'b', 'c', 'd', 'e']) {
        clock.advance(1000);
        await createProduct(t, name);
      }
      clock.advance(HOUR);
      until = clock.now().toISOString();
      clock.advance(1000);
      await createProduct(t, 'After');
      const rows = await deliveriesOf(t, endpoint.id);
      expect(rows).toHaveLength(7);
      const [before, a, b, c, d, , after] = rows;
      await setStatus([before.id, a.id, b.id, after.id], 'failed');
      await setStatus([c.id], 'disabled');
      await setStatus([d.id], 'success');
      // rows[5] stays pending, not due before the test ends.
      await t.ctx.db.query('UPDATE webhook_deliveries SET next_attempt_at = $2 WHERE id = $1', [rows[5].id, new Date(Date.now() + DAY)]);
      afterId = after.id;
      inside.failed = [a.id, b.id];
      inside.disabled = [c.id];
      clock.advance(HOUR);
    });

    it('counts in a dry run, by status, changing nothing', async () => {
      const before = await snapshot(t.ctx);
      const res = await recover(endpoint.id, { since, until, dryRun: true });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ object: 'webhook_recovery', dryRun: true, endpointId: endpoint.id, since, until, statuses: ['failed', 'disabled'], count: 3 });
      expect((await recover(endpoint.id, { since, until, statuses: ['failed'], dryRun: true })).json().count).toBe(2);
      expect((await recover(endpoint.id, { since, until, statuses: ['disabled'], dryRun: true })).json().count).toBe(1);
      // Without until, the window runs to now and takes in the later failure too; the workspace mount answers alike.
      const open = await t.call(key, 'POST', `/v1/workspaces/${ws}/webhooks/endpoints/${endpoint.id}/recover`, { since, dryRun: true });
      expect(open.json()).toMatchObject({ count: 4, until: clock.now().toISOString() });
      expect(await snapshot(t.ctx)).toEqual(before);
    });

    it('replays exactly the failed and disabled deliveries of the window, with replayOf, sent once each', async () => {
      // A worker that polls once a minute: what it sends at once, it was woken for (the replays' commit NOTIFYs it).
      clock.set(new Date());
      worker = testWorker(t);
      await worker.start();
      const res = await recover(endpoint.id, { since, until });
      expect(res.statusCode, res.body).toBe(202);
      const started: Recovery = res.json();
      // No more than a batch: done within the request, nothing left for the background.
      expect(started).toEqual({
        object: 'webhook_recovery',
        id: expect.stringMatching(/^whr_[0-9a-z]{26}$/),
        endpointId: endpoint.id,
        since,
        until,
        statuses: ['failed', 'disabled'],
        status: 'completed',
        count: 3,
        replayed: 3,
        skipped: 0,
        error: null,
        createdAt: clock.now().toISOString(),
        completedAt: clock.now().toISOString(),
      });
      recoveryId = started.id;
      const done = await getRecovery(recoveryId);
      expect(done).toEqual(started);
      const replays = await replaysOf(endpoint.id);
      expect(replays.map((r) => r.replay_of).sort()).toEqual([...inside.failed, ...inside.disabled].sort());

      await receiver.waitFor(3, 15_000);
      await eventually(async () => (await replaysOf(endpoint.id)).every((r) => r.status === 'success'));
      expect(receiver.requests).toHaveLength(3);
      // Each replay carries its original's event body, byte for byte, as a single replay does, signed as any delivery.
      for (const request of receiver.requests) {
        const replay = replays.find((r) => r.id === request.flatHeaders['webhook-id'])!;
        expect(replay, request.flatHeaders['webhook-id']).toBeDefined();
        expect(() => new Webhook(endpoint.secret).verify(request.body, request.flatHeaders)).not.toThrow();
        expect(request.body).toBe(replay.payload);
        const original = (await t.call(key, 'GET', `/v1/webhooks/deliveries/${replay.replay_of}`)).json().delivery;
        expect(JSON.parse(request.body)).toEqual(original.requestBody);
      }

      // Followed through the workspace mount and the endpoint's list too.
      expect((await t.call(key, 'GET', `/v1/workspaces/${ws}/webhooks/recoveries/${recoveryId}`)).json()).toEqual(done);
      const list = await t.call(key, 'GET', `/v1/webhooks/endpoints/${endpoint.id}/recoveries`);
      expect(list.json()).toEqual({ data: [done], nextPageUrl: null, previousPageUrl: null });
    });

    it('replays nothing the second time, and nothing reaches the receiver twice', async () => {
      for (const statuses of [undefined, ['failed'], ['disabled']]) {
        expect((await recover(endpoint.id, { since, until, statuses, dryRun: true })).json().count).toBe(0);
        const again = await recover(endpoint.id, { since, until, statuses });
        expect(again.statusCode).toBe(202);
        expect(again.json()).toMatchObject({ status: 'completed', count: 0, replayed: 0 });
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(receiver.requests).toHaveLength(3);
      expect(await replaysOf(endpoint.id)).toHaveLength(3);
    });

    it('recovers a failed replay in the window instead of its original again', async () => {
      await worker?.stop();
      worker = null;
      const [replay] = await replaysOf(endpoint.id);
      await setStatus([replay.id], 'failed');
      // The window now reaches the replays and the later failure: the failed replay is replayed, its original passed over.
      const window = { since, until: clock.now().toISOString() };
      expect((await recover(endpoint.id, { ...window, dryRun: true })).json().count).toBe(2);
      const done = (await recover(endpoint.id, window)).json();
      expect(done).toMatchObject({ status: 'completed', count: 2, replayed: 2, skipped: 3 });
      const pending = (await replaysOf(endpoint.id)).filter((r) => r.status === 'pending');
      expect(pending.map((r) => r.replay_of).sort()).toEqual([replay.id, afterId].sort());
    });
  });

  describe('refusals', () => {
    const since = () => new Date(clock.now().getTime() - HOUR).toISOString();

    it('is a 409 ENDPOINT_INACTIVE on a paused endpoint, dry run or not', async () => {
      const paused = await addEndpoint(t, `${receiver.url}/paused`);
      await seed(paused.id, 2);
      expect((await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${paused.id}`, { active: false })).statusCode).toBe(200);
      const before = await snapshot(t.ctx);
      for (const dryRun of [true, false]) {
        const error = expectError(await recover(paused.id, { since: since(), dryRun }), 409, 'ENDPOINT_INACTIVE');
        expect(error.message).toContain('paused');
      }
      expect(await snapshot(t.ctx)).toEqual(before);
    });

    it('is a 400 VALIDATION for a reversed window, one longer than the retention, or a bad body, changing nothing', async () => {
      const now = clock.now().getTime();
      const before = await snapshot(t.ctx);
      const reversed = expectError(await recover(endpoint.id, { since: since(), until: new Date(now - 2 * HOUR).toISOString() }), 400, 'VALIDATION');
      expect(reversed.details).toEqual([{ path: 'body.until', message: 'must not be before since' }]);
      const long = expectError(await recover(endpoint.id, { since: new Date(now - 31 * DAY).toISOString(), dryRun: true }), 400, 'VALIDATION');
      expect(long.message).toContain('retention');
      expect(long.message).toContain('30d');
      for (const body of [
        {},
        { since: 'yesterday' },
        { since: since(), statuses: ['pending'] },
        { since: since(), statuses: [] },
        { since: since(), statuses: ['failed', 'failed'] },
        { since: since(), dryRun: 'yes' },
        { since: since(), extra: 1 },
        { since: new Date(now + HOUR).toISOString() },
        { since: '2016-12-31T23:59:60Z' },
      ]) {
        expectError(await recover(endpoint.id, body), 400, 'VALIDATION');
      }
      expect(await snapshot(t.ctx)).toEqual(before);
    });

    it("is a 404 for another workspace's endpoint or recovery, and for ids of the wrong shape", async () => {
      const other = t.demo.workspaces[1].apiKey;
      const [recovery] = (await t.call(key, 'GET', `/v1/webhooks/endpoints/${endpoint.id}/recoveries`)).json().data;
      const before = await snapshot(t.ctx);
      expectError(await recover(endpoint.id, { since: since() }, other), 404, 'NOT_FOUND');
      expectError(await recover(endpoint.id, { since: since(), dryRun: true }, other), 404, 'NOT_FOUND');
      expectError(await t.call(other, 'GET', `/v1/webhooks/recoveries/${recovery.id}`), 404, 'NOT_FOUND');
      expectError(await t.call(other, 'GET', `/v1/webhooks/endpoints/${endpoint.id}/recoveries`), 404, 'NOT_FOUND');
      expectError(await recover('whe_nope', { since: since() }), 404, 'NOT_FOUND');
      expectError(await recover(newId('whe'), { since: since() }), 404, 'NOT_FOUND');
      expectError(await t.call(key, 'GET', `/v1/webhooks/recoveries/${newId('whr')}`), 404, 'NOT_FOUND');
      expectError(await t.call(key, 'GET', `/v1/webhooks/recoveries/${endpoint.id}`), 404, 'NOT_FOUND');
      expect(await snapshot(t.ctx)).toEqual(before);
    });
  });

  describe('thousands of deliveries', () => {
    it('answers at once and recovers them all in the background, each once', async () => {
      const bulk = await addEndpoint(t, `${receiver.url}/bulk`);
      const since = clock.now().toISOString();
      const failed = await seed(bulk.id, 2500);
      await seed(bulk.id, 500, 'disabled');
      await seed(bulk.id, 300, 'success');
      // What svc serve's statistics keeper does within seconds of a table's growth (db/statistics.ts):
      // the count's plan cached on the tiny table scanned it whole for each of the 3,300 rows.
      await t.ctx.db.query('ANALYZE webhook_deliveries');
      clock.advance(1000);
      const res = await recover(bulk.id, { since });
      expect(res.statusCode, res.body).toBe(202);
      expect(res.json()).toMatchObject({ status: 'running', count: 3000, replayed: 0 });
      const done = await finished(res.json().id);
      expect(done).toMatchObject({ status: 'completed', count: 3000, replayed: 3000, skipped: 0 });
      const replays = await replaysOf(bulk.id);
      expect(replays).toHaveLength(3000);
      expect(new Set(replays.map((r) => r.replay_of)).size).toBe(3000);
      expect(replays.filter((r) => failed.includes(r.replay_of))).toHaveLength(2500);
      expect(replays.every((r) => JSON.parse(r.payload).seed === r.replay_of)).toBe(true);
    }, 120_000);

    it('resumes from its cursor after its runner stopped or died, and two runners never replay one delivery twice', async () => {
      // The app's own runner steps aside (here and below): the runners below are the processes of this test.
      await t.ctx.recoveries.stop();
      const options = { batchSize: 100, pauseMs: 0 };
      const target = await addEndpoint(t, `${receiver.url}/resume`);
      const since = clock.now().toISOString();
      await seed(target.id, 1000);
      clock.advance(1000);
      const created: Recovery = (await recover(target.id, { since })).json();
      expect(created).toMatchObject({ status: 'running', count: 1000, replayed: 0 });

      // A process takes it, does two batches and dies: its lease keeps every other runner off until it runs out.
      expect(await claimRecovery(t.ctx.db, 'dead', clock.now(), 60_000)).toBe(created.id);
      for (let i = 0; i < 2; i++) expect(await runBatch(t.ctx.db, created.id, 'dead', clock.now(), 60_000, 100)).toMatchObject({ state: 'more', replayed: 100 });
      const a = new RecoveryRunner(t.ctx.db, clock, options);
      a.kick();
      await a.stop();
      expect(await getRecovery(created.id)).toMatchObject({ status: 'running', replayed: 200 });

      // Once the lease has run out, a runner goes on from the cursor; stopped between two batches, it gives the recovery back.
      clock.advance(61_000);
      const b = new RecoveryRunner(t.ctx.db, clock, { ...options, pauseMs: 50 });
      b.kick();
      await eventually(async () => (await getRecovery(created.id)).replayed >= 400);
      await b.stop();
      const halfway = await getRecovery(created.id);
      expect(halfway.status).toBe('running');
      expect(halfway.replayed).toBeLessThan(1000);
      const [lease] = await t.ctx.db.query<{ lease_owner: string | null }>('SELECT lease_owner FROM webhook_recoveries WHERE id = $1', [created.id]);
      expect(lease.lease_owner).toBeNull();

      // Another runner takes it up at once (the lease was given back) and finishes it.
      const c = new RecoveryRunner(t.ctx.db, clock, options);
      c.kick();
      expect(await finished(created.id)).toMatchObject({ status: 'completed', count: 1000, replayed: 1000, skipped: 0 });
      await c.stop();
      const replays = await replaysOf(target.id);
      expect(replays).toHaveLength(1000);
      expect(new Set(replays.map((r) => r.replay_of)).size).toBe(1000);
    }, 120_000);

    it('replays each delivery once when two recoveries of one window run at once', async () => {
      await t.ctx.recoveries.stop();
      const target = await addEndpoint(t, `${receiver.url}/twice`);
      const since = clock.now().toISOString();
      await seed(target.id, 600);
      clock.advance(1000);
      const [first, second] = (await Promise.all([recover(target.id, { since }), recover(target.id, { since })])).map((res) => res.json() as Recovery);
      expect([first.count, second.count]).toEqual([600, 600]);
      const runners = [0, 1].map(() => new RecoveryRunner(t.ctx.db, clock, { batchSize: 50, pauseMs: 0 }));
      for (const runner of runners) runner.kick();
      const done = [await finished(first.id), await finished(second.id)];
      for (const runner of runners) await runner.stop();
      expect(done[0].replayed + done[1].replayed).toBe(600);
      expect(done[0].skipped + done[1].skipped).toBe(600);
      const replays = await replaysOf(target.id);
      expect(replays).toHaveLength(600);
      expect(new Set(replays.map((r) => r.replay_of)).size).toBe(600);
    }, 120_000);

    it('ends as failed when the endpoint is paused mid-run', async () => {
      await t.ctx.recoveries.stop();
      const target = await addEndpoint(t, `${receiver.url}/paused-later`);
      const since = clock.now().toISOString();
      await seed(target.id, 600);
      clock.advance(1000);
      const created: Recovery = (await recover(target.id, { since })).json();
      expect(await claimRecovery(t.ctx.db, 'one', clock.now(), 60_000)).toBe(created.id);
      expect(await runBatch(t.ctx.db, created.id, 'one', clock.now(), 60_000, 100)).toMatchObject({ state: 'more', replayed: 100 });
      expect((await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${target.id}`, { active: false })).statusCode).toBe(200);
      expect(await runBatch(t.ctx.db, created.id, 'one', clock.now(), 60_000, 100)).toMatchObject({ state: 'done', replayed: 0 });
      const failed = await getRecovery(created.id);
      expect(failed).toMatchObject({ status: 'failed', replayed: 100, completedAt: clock.now().toISOString() });
      expect(failed.error).toContain('paused');
      // Another runner's batch on a recovery it does not hold does nothing.
      expect(await runBatch(t.ctx.db, created.id, 'one', clock.now(), 60_000, 100)).toEqual({ state: 'lost' });
    });
  });
});
