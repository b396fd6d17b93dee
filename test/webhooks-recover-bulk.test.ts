import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RecoveryRunner } from '../src/webhooks/recoveries/runner.js';
import { claimRecovery, runBatch } from '../src/webhooks/recoveries/store.js';
import type { ManualClock, TestApp } from './helpers/app.js';
import { addEndpoint, closeAppAndReceiver, eventually } from './helpers/delivery.js';
import type { Receiver } from './helpers/receiver.js';
import { openRecoveryApp, recoveryCalls, type Recovery } from './helpers/recovery.js';

/**
 * POST /webhooks/endpoints/{endpointId}/recover over thousands of deliveries: the answer comes at
 * once, the replays follow in the background batch by batch, a recovery goes on from its cursor
 * under another runner, and no delivery is replayed twice, even by two recoveries of one window.
 */
describe('bulk recovery of webhook deliveries', () => {
  let t: TestApp;
  let receiver: Receiver;
  let clock: ManualClock;
  let key: string;

  const { recover, getRecovery, finished, replaysOf, seed } = recoveryCalls(() => t);

  beforeAll(async () => {
    ({ t, receiver, clock } = await openRecoveryApp());
    key = t.demo.workspaces[0].apiKey;
  });
  afterAll(() => closeAppAndReceiver(t, receiver));

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
      a.wake();
      await a.stop();
      expect(await getRecovery(created.id)).toMatchObject({ status: 'running', replayed: 200 });

      // Once the lease has run out, a runner goes on from the cursor; stopped between two batches, it gives the recovery back.
      clock.advance(61_000);
      const b = new RecoveryRunner(t.ctx.db, clock, { ...options, pauseMs: 50 });
      b.wake();
      await eventually(async () => (await getRecovery(created.id)).replayed >= 400);
      await b.stop();
      const halfway = await getRecovery(created.id);
      expect(halfway.status).toBe('running');
      expect(halfway.replayed).toBeLessThan(1000);
      const [lease] = await t.ctx.db.query<{ lease_owner: string | null }>('SELECT lease_owner FROM webhook_recoveries WHERE id = $1', [created.id]);
      expect(lease.lease_owner).toBeNull();

      // Another runner takes it up at once (the lease was given back) and finishes it.
      const c = new RecoveryRunner(t.ctx.db, clock, options);
      c.wake();
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
      for (const runner of runners) runner.wake();
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
