import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/db.js';
import { openPostgres } from '../../src/db/postgres.js';
import { ManualClock } from '../../src/lib/clock.js';
import { checkAlerts, type AlertDeps } from '../../src/webhooks/alerts/check.js';
import type { DeliveryWorker } from '../../src/engine/delivery/worker.js';
import { startTestApp, userOf, type TestApp } from '../helpers/app.js';
import { POSTGRES_URL } from '../helpers/db.js';
import { addEndpoint, createProduct, endpointState, testWorker } from '../helpers/delivery.js';
import { ok } from '../helpers/expect.js';
import { browserKeys, decryptPush, subscriptionBody } from '../helpers/push.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

const MINUTE = 60_000;
const RETRY_MS = MINUTE;
/** The rule's window, shortened by configuration: the default is 15 minutes. */
const FAILING_AFTER = 5 * MINUTE;

/**
 * An endpoint's failure alerts from the first failure to auto-disable, and another's recovery. Every
 * look is made by two processes at once (two connection pools on the schema, as `svc serve` and
 * `svc worker` would be): each notice must still come once.
 */
describe('failure alerts', () => {
  let t: TestApp;
  let clock: ManualClock;
  let worker: DeliveryWorker;
  let otherDb: Db;
  let receiver: Receiver;
  let pushService: Receiver;
  const keys = browserKeys();
  let answer = 500;
  let failingId: string;
  let recoveringId: string;
  const workspace = () => t.demo.workspaces[0];
  const readers = () => ['owner', 'admin', 'viewer'].map((role) => userOf(t.demo, role as 'owner').id).sort();

  /** One look by each of two processes, at once; returns how many alerts they decided together. */
  async function look(): Promise<number> {
    const config = t.ctx.config;
    // Either may win a notice; each wakes its process's push queue (here both are the test's one).
    const here: AlertDeps = { db: t.ctx.db, clock, config, push: t.ctx.push };
    const there: AlertDeps = { db: otherDb, clock, config, push: t.ctx.push };
    const [a, b] = await Promise.all([checkAlerts(here), checkAlerts(there)]);
    return a + b;
  }

  async function failedDelivery(): Promise<void> {
    await createProduct(t);
    await worker.runDue();
    clock.advance(RETRY_MS);
    await worker.runDue();
  }

  const notices = (endpointId: string) =>
    t.ctx.db.query<{ user_id: string; type: string; message: string; subject: unknown }>(
      "SELECT user_id, type, message, subject FROM notifications WHERE subject->>'id' = $1 ORDER BY created_at, user_id",
      [endpointId],
    );
  const events = (type: string) => t.ctx.db.query<{ body: string }>('SELECT body FROM events WHERE type = $1 ORDER BY created_at', [type]);
  const view = async (id: string) => ok(await t.call(workspace().apiKey, 'GET', `/v1/webhooks/endpoints/${id}`));

  beforeAll(async () => {
    clock = new ManualClock();
    t = await startTestApp({
      clock,
      config: { allowPrivateTargets: true, retryScheduleMs: [RETRY_MS], alertFailingAfterMs: FAILING_AFTER, alertDigestAfter: 10 },
      push: { retryDelaysMs: [50] },
    });
    otherDb = await openPostgres({ url: POSTGRES_URL, schema: t.testDb.schema, poolSize: 3 });
    worker = testWorker(t);
    receiver = await startReceiver(() => ({ status: answer }));
    pushService = await startReceiver(() => ({ status: 201 }));
    ok(await t.call(userOf(t.demo, 'owner').token, 'POST', '/v1/me/push-devices', subscriptionBody(`${pushService.url}/push/owner`, keys)), 201);
    t.ctx.push.start(() => {});
    failingId = (await addEndpoint(t, `${receiver.url}/failing`)).id;
  });
  afterAll(async () => {
    await otherDb?.close();
    await t?.close();
    await receiver?.close();
    await pushService?.close();
  });

  it('tells nobody while the failures are younger than the window', async () => {
    const start = clock.now();
    for (let i = 0; i < 3; i++) await createProduct(t);
    await worker.runDue();
    expect(await look()).toBe(0);
    clock.advance(RETRY_MS);
    await worker.runDue();
    expect(await endpointState(t, failingId)).toMatchObject({ active: true, consecutive_failures: 3 });
    clock.set(new Date(start.getTime() + FAILING_AFTER - 1));
    expect(await look()).toBe(0);
    expect(await notices(failingId)).toEqual([]);
    expect((await view(failingId)).failing).toBeNull();
  });

  it('tells each reader once, with what fails, since when and a link, when every attempt has failed for the window', async () => {
    const start = new Date(clock.now().getTime() - FAILING_AFTER + 1);
    clock.advance(1);
    expect(await look()).toBe(1);
    expect(await look()).toBe(0);
    const rows = await notices(failingId);
    expect(rows.map((r) => r.user_id).sort()).toEqual(readers());
    for (const row of rows) {
      expect(row.type).toBe('webhook.endpoint.failing');
      expect(row.subject).toEqual({ type: 'webhook_endpoint', id: failingId, url: `/v1/webhooks/endpoints/${failingId}` });
      expect(row.message).toContain(`has failed every attempt since ${start.toISOString().slice(0, 16).replace('T', ' ')} UTC (HTTP 500)`);
      expect(row.message).toContain('0 deliveries wait for a retry');
    }
    const [event] = await events('webhook.endpoint.failing');
    expect(JSON.parse(event.body)).toMatchObject({ type: 'webhook.endpoint.failing', subject: { id: failingId, type: 'webhook_endpoint' } });
    expect((await view(failingId)).failing).toEqual({ since: start.toISOString(), responseStatus: 500, error: expect.any(String), deliveriesWaiting: 0 });
  });

  it('pushes the failing notice to the reader’s browser, encrypted', async () => {
    await pushService.waitFor(1);
    const [{ id }] = await t.ctx.db.query<{ id: string }>("SELECT id FROM notifications WHERE user_id = $1 AND type = 'webhook.endpoint.failing'", [userOf(t.demo, 'owner').id]);
    const message = decryptPush(pushService.requests[0], keys) as Record<string, string>;
    expect(message).toMatchObject({ id, type: 'webhook.endpoint.failing', workspaceId: workspace().id });
    expect(message.message).toContain(failingId);
  });

  it('warns once more when the endpoint is one failed delivery from auto-disable', async () => {
    await failedDelivery();
    expect(await endpointState(t, failingId)).toMatchObject({ active: true, consecutive_failures: 4 });
    expect(await look()).toBe(1);
    expect(await look()).toBe(0);
    const warned = (await notices(failingId)).filter((r) => r.type === 'webhook.endpoint.disabling');
    expect(warned.map((r) => r.user_id).sort()).toEqual(readers());
    expect(warned[0].message).toContain('is one failed delivery from being disabled');
    expect(await events('webhook.endpoint.failing')).toHaveLength(1);
  });

  it('then auto-disables the endpoint as before, and the incident ends without a recovery notice', async () => {
    await failedDelivery();
    expect(await endpointState(t, failingId)).toMatchObject({ active: false, disabled_reason: 'auto', consecutive_failures: 5 });
    expect(await look()).toBe(0);
    const types = (await notices(failingId)).map((r) => r.type);
    expect(types.filter((type) => type === 'webhook.endpoint.auto_disabled')).toHaveLength(3);
    expect(types.filter((type) => type === 'webhook.endpoint.failing')).toHaveLength(3);
    expect(types.filter((type) => type === 'webhook.endpoint.disabling')).toHaveLength(3);
    expect(types).toHaveLength(9);
    expect(await events('webhook.endpoint.auto_disabled')).toHaveLength(1);
    expect(await events('webhook.endpoint.recovered')).toEqual([]);
    expect((await view(failingId)).failing).toBeNull();
  });

  it('tells once when a failing endpoint delivers again', async () => {
    recoveringId = (await addEndpoint(t, `${receiver.url}/recovering`)).id;
    const start = clock.now();
    for (let i = 0; i < 3; i++) await createProduct(t);
    await worker.runDue();
    clock.advance(FAILING_AFTER);
    expect(await look()).toBe(1);
    expect((await view(recoveringId)).failing).toMatchObject({ since: start.toISOString(), deliveriesWaiting: 3 });

    answer = 200;
    await worker.runDue();
    clock.advance(1000);
    expect(await look()).toBe(1);
    expect(await look()).toBe(0);
    const recovered = (await notices(recoveringId)).filter((r) => r.type === 'webhook.endpoint.recovered');
    expect(recovered.map((r) => r.user_id).sort()).toEqual(readers());
    expect(recovered[0].message).toContain('delivers again');
    const bodies = (await events('webhook.endpoint.recovered')).map((e) => JSON.parse(e.body));
    expect(bodies).toEqual([expect.objectContaining({ type: 'webhook.endpoint.recovered', subject: expect.objectContaining({ id: recoveringId }) })]);
    expect((await view(recoveringId)).failing).toBeNull();
    expect(await endpointState(t, recoveringId)).toMatchObject({ active: true, consecutive_failures: 0 });
  });
});
