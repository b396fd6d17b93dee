import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { checkAlerts } from '../../src/webhooks/alerts/check.js';
import type { DeliveryWorker } from '../../src/engine/delivery/worker.js';
import { startTestApp, userOf, type TestApp } from '../helpers/app.js';
import { addEndpoint, createProduct, testWorker } from '../helpers/delivery.js';
import { ok } from '../helpers/expect.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

const MINUTE = 60_000;
const ENDPOINTS = 1000;

/**
 * Many endpoints failing at once (a shared receiver down) send people a digest, not one notice per
 * endpoint; an endpoint with alerts off sends nothing at all. The rule is shortened by configuration:
 * one failed delivery for a minute.
 */
describe('failure alerts of many endpoints, and of none', () => {
  let t: TestApp;
  let clock: ManualClock;
  let worker: DeliveryWorker;
  let receiver: Receiver;
  let quietId: string;
  const check = () => checkAlerts({ db: t.ctx.db, clock, config: t.ctx.config });
  const countOf = async (sql: string, params: unknown[]) => (await t.ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, params))[0].n;

  beforeAll(async () => {
    clock = new ManualClock();
    t = await startTestApp({
      clock,
      config: { allowPrivateTargets: true, alertFailingAfterMs: MINUTE, alertFailingDeliveries: 1, alertDigestAfter: 3, alertDigestWindowMs: 5 * MINUTE },
    });
    worker = testWorker(t);
    receiver = await startReceiver(() => ({ status: 503 }));
    for (let i = 0; i < ENDPOINTS; i++) await addEndpoint(t, `${receiver.url}/${i}`);
    quietId = (await addEndpoint(t, `${receiver.url}/quiet`, ['product.*'], 1)).id;
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('turns alerts off and on for one endpoint with PATCH', async () => {
    const key = t.demo.workspaces[1].apiKey;
    expect(ok(await t.call(key, 'GET', `/v1/webhooks/endpoints/${quietId}`))).toMatchObject({ alerts: true, failing: null });
    expect(ok(await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${quietId}`, { alerts: false }))).toMatchObject({ alerts: false });
    const refused = await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${quietId}`, { alerts: 'no' });
    expect(refused.statusCode).toBe(400);
    expect(ok(await t.call(key, 'GET', `/v1/webhooks/endpoints/${quietId}`))).toMatchObject({ alerts: false });
  });

  it('sends a few notices and holds the rest for a digest when a thousand endpoints fail at once', { timeout: 120_000 }, async () => {
    await createProduct(t);
    await createProduct(t, 'Quiet', 1);
    await worker.runDue();
    expect(receiver.requests).toHaveLength(ENDPOINTS + 1);
    clock.advance(MINUTE);

    expect(await check()).toBe(ENDPOINTS);
    expect(await check()).toBe(0);
    const workspaceId = t.demo.workspaces[0].id;
    expect(await countOf("events WHERE type = 'webhook.endpoint.failing' AND workspace_id = $1", [workspaceId])).toBe(ENDPOINTS);
    const readers = ['owner', 'admin', 'viewer'].map((role) => userOf(t.demo, role as 'owner').id);
    for (const user of readers) {
      expect(await countOf("notifications WHERE user_id = $1 AND workspace_id = $2 AND type = 'webhook.endpoint.failing'", [user, workspaceId])).toBe(3);
    }

    // Nothing more until the window ends; then one digest per reader, once.
    clock.advance(3 * MINUTE);
    expect(await check()).toBe(0);
    expect(await countOf("notifications WHERE type = 'webhook.endpoint.digest'", [])).toBe(0);
    clock.advance(MINUTE);
    await check();
    await check();
    const digests = await t.ctx.db.query<{ user_id: string; workspace_id: string; message: string; subject: unknown }>(
      "SELECT user_id, workspace_id, message, subject FROM notifications WHERE type = 'webhook.endpoint.digest' ORDER BY user_id",
    );
    expect(digests.map((d) => d.user_id)).toEqual([...readers].sort());
    for (const d of digests) {
      expect(d).toMatchObject({ workspace_id: workspaceId, subject: null });
      expect(d.message).toContain(`${ENDPOINTS - 3} more endpoints started failing`);
    }
    expect(await countOf('notifications WHERE workspace_id = $1', [workspaceId])).toBe(3 * 3 + 3);
  });

  it('tells nobody of an endpoint with alerts off, until they are on again', async () => {
    const key = t.demo.workspaces[1].apiKey;
    expect(await countOf("notifications WHERE subject->>'id' = $1", [quietId])).toBe(0);
    expect(await countOf("events WHERE workspace_id = $1 AND type LIKE 'webhook.endpoint.%'", [t.demo.workspaces[1].id])).toBe(0);
    expect(ok(await t.call(key, 'GET', `/v1/webhooks/endpoints/${quietId}`))).toMatchObject({ alerts: false, failing: null });

    ok(await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${quietId}`, { alerts: true }));
    expect(await check()).toBe(1);
    expect(await countOf("notifications WHERE subject->>'id' = $1 AND type = 'webhook.endpoint.failing'", [quietId])).toBe(1);
    expect(ok(await t.call(key, 'GET', `/v1/webhooks/endpoints/${quietId}`)).failing).toMatchObject({ responseStatus: 503, deliveriesWaiting: 1 });
  });
});
