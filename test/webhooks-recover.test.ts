import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/lib/ids.js';
import type { DeliveryWorker } from '../src/engine/delivery/worker.js';
import type { ManualClock, TestApp } from './helpers/app.js';
import { addEndpoint, closeAppAndReceiver, createProduct, deliveriesOf, eventually, testWorker } from './helpers/delivery.js';
import { expectError } from './helpers/expect.js';
import type { Receiver } from './helpers/receiver.js';
import { DAY, HOUR, openRecoveryApp, recoveryCalls, type Recovery } from './helpers/recovery.js';
import { snapshot } from './helpers/security.js';

/**
 * POST /webhooks/endpoints/{endpointId}/recover (docs/webhooks.md#bulk-recovery): a dry run
 * counts, a real run replays the failed and disabled deliveries of a window in the background, batch
 * by batch, and a second run sends nothing twice. Time runs on a manual clock set near the real time,
 * so that receivers verify the signatures of what the worker sends.
 */
describe('bulk recovery of webhook deliveries', () => {
  let t: TestApp;
  let receiver: Receiver;
  let clock: ManualClock;
  let key: string;
  let ws: string;
  let endpoint: { id: string; secret: string };
  let worker: DeliveryWorker | null = null;

  const { recover, getRecovery, replaysOf, seed } = recoveryCalls(() => t);
  const setStatus = (ids: string[], status: string) =>
    t.ctx.db.query(`UPDATE webhook_deliveries SET status = $2, next_attempt_at = NULL, attempt = 11 WHERE id = ANY($1::text[])`, [ids, status]);

  beforeAll(async () => {
    ({ t, receiver, clock } = await openRecoveryApp());
    key = t.demo.workspaces[0].apiKey;
    ws = t.demo.workspaces[0].id;
    endpoint = await addEndpoint(t, `${receiver.url}/hooks`);
  });
  afterAll(async () => {
    await worker?.stop();
    await closeAppAndReceiver(t, receiver);
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
});
