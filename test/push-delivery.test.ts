import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/lib/ids.js';
import { ManualClock } from '../src/lib/clock.js';
import type { DeliveryWorker } from '../src/engine/delivery/worker.js';
import { PUBLIC_URL, startTestApp, userOf, type TestApp } from './helpers/app.js';
import { addEndpoint, createProduct, deliveriesOf, endpointState, eventually, testWorker } from './helpers/delivery.js';
import { ok } from './helpers/expect.js';
import { sample } from './helpers/metrics.js';
import { browserKeys, decryptPush, subscriptionBody, verifyVapid, type BrowserKeys } from './helpers/push.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

const RETRY_MS = 60_000;
/** Longer than the test: a hanging push service stays hanging until the app closes. */
const PUSH_TIMEOUT_MS = 120_000;

/**
 * Every notification is pushed to its user's devices. Push services are real HTTP
 * receivers on 127.0.0.1 (SVC_ALLOW_PRIVATE_TARGETS, as webhook tests); the test plays the browser:
 * it makes the subscription's keys, checks the VAPID header and decrypts the message (RFC 8291).
 */
describe('push messages of notifications', () => {
  let t: TestApp;
  let clock: ManualClock;
  let worker: DeliveryWorker;
  let webhooks: Receiver;
  const services: Receiver[] = [];
  /** What the queue reported (as svc serve logs it). */
  const faults: string[] = [];
  /** The owner's first device, kept for the last test. */
  let first: { service: Receiver; keys: BrowserKeys; id: string };
  const token = (role: 'owner' | 'admin' | 'viewer' | 'outsider') => userOf(t.demo, role).token;

  /** A push service on 127.0.0.1 answering `status`, and a device of `role` subscribed to it. */
  async function device(role: 'owner' | 'admin' | 'viewer' | 'outsider', status: number | 'hang' = 201) {
    const service = await startReceiver(() => (status === 'hang' ? { hang: true } : { status }));
    services.push(service);
    const keys = browserKeys();
    const created = ok(await t.call(token(role), 'POST', '/v1/me/push-devices', subscriptionBody(`${service.url}/push/${role}-${services.length}`, keys)), 201);
    return { service, keys, id: created.id as string };
  }

  /** Fails the endpoint's deliveries until the engine auto-disables it. */
  async function autoDisable(endpointId: string): Promise<void> {
    for (let i = 0; i < 5; i++) {
      await createProduct(t);
      await worker.runDue();
      clock.advance(RETRY_MS);
      await worker.runDue();
    }
    expect(await endpointState(t, endpointId)).toMatchObject({ active: false, disabled_reason: 'auto' });
  }

  const notificationOf = async (userId: string, endpointId: string) => {
    const [row] = await t.ctx.db.query<{ id: string; workspace_id: string; message: string; push_claimed_at: Date | null }>(
      "SELECT id, workspace_id, message, push_claimed_at FROM notifications WHERE user_id = $1 AND subject->>'id' = $2",
      [userId, endpointId],
    );
    return row;
  };

  const listed = async (role: 'owner' | 'admin') => ok(await t.call(token(role), 'GET', '/v1/me/push-devices')).data as { id: string; lastUsedAt: string | null }[];

  beforeAll(async () => {
    clock = new ManualClock();
    t = await startTestApp({ clock, config: { allowPrivateTargets: true, retryScheduleMs: [RETRY_MS] }, push: { retryDelaysMs: [50, 50], timeoutMs: PUSH_TIMEOUT_MS } });
    worker = testWorker(t);
    webhooks = await startReceiver(() => ({ status: 500 }));
    t.ctx.push.start((error, during) => faults.push(`${during}: ${(error as Error).message}`));
  });
  afterAll(async () => {
    await t?.close();
    for (const service of services) await service.close();
    await webhooks?.close();
  });

  it('sends an encrypted message with VAPID to each device of each notified user when an endpoint is auto-disabled', async () => {
    const owner = (first = await device('owner'));
    const outsider = await device('outsider');
    const endpointId = (await addEndpoint(t, `${webhooks.url}/a`)).id;
    await autoDisable(endpointId);
    await owner.service.waitFor(1);

    const [request] = owner.service.requests;
    expect(request.method).toBe('POST');
    expect(request.url).toBe('/push/owner-1');
    const notification = await notificationOf(userOf(t.demo, 'owner').id, endpointId);
    expect(request.headers).toMatchObject({
      'content-encoding': 'aes128gcm',
      'content-type': 'application/octet-stream',
      ttl: '86400',
      urgency: 'high',
      topic: notification.id,
    });
    const { publicKey } = ok(await t.call(token('owner'), 'GET', '/v1/notifications/push-key'));
    const claims = verifyVapid(request.headers.authorization, publicKey);
    expect(claims.aud).toBe(owner.service.url);
    expect(claims.sub).toBe(t.ctx.config.pushContact);
    const inSeconds = claims.exp - Date.now() / 1000;
    expect(inSeconds).toBeGreaterThan(60);
    expect(inSeconds).toBeLessThanOrEqual(86_400);

    expect(decryptPush(request, owner.keys)).toEqual({
      id: notification.id,
      type: 'webhook.endpoint.auto_disabled',
      workspaceId: t.demo.workspaces[0].id,
      message: notification.message,
      url: `${PUBLIC_URL}/dashboard/notifications`,
    });
    // Another device's keys cannot read it.
    expect(() => decryptPush(request, browserKeys())).toThrow();
    expect(notification.push_claimed_at).not.toBeNull();
    await eventually(async () => (await listed('owner')).find((d) => d.id === owner.id)?.lastUsedAt === clock.now().toISOString());
    // The outsider was not notified, so its device hears nothing.
    expect(outsider.service.requests).toHaveLength(0);
    // Each notification is pushed once, however often the queue is woken.
    t.ctx.push.wake();
    await eventually(() => t.ctx.push.idle());
    expect(owner.service.requests).toHaveLength(1);
  });

  /** A notification for `role` written as the engine writes them, then the queue woken. */
  async function notify(role: 'owner' | 'admin'): Promise<string> {
    const id = newId('ntf', clock.now());
    await t.ctx.db.query(
      `INSERT INTO notifications (id, user_id, workspace_id, type, subject, message, created_at)
       VALUES ($1, $2, $3, 'webhook.endpoint.auto_disabled', NULL, 'An endpoint was disabled.', $4)`,
      [id, userOf(t.demo, role).id, t.demo.workspaces[0].id, clock.now()],
    );
    t.ctx.push.wake();
    return id;
  }

  it('removes a device whose push service answers 410 or 404, without retrying', async () => {
    const gone = await device('admin', 410);
    const missing = await device('admin', 404);
    const kept = await device('admin', 201);
    const before = sample(await t.ctx.metrics.text(), 'svc_push_messages_total', { outcome: 'gone' })!;
    await notify('admin');
    await eventually(async () => (await listed('admin')).length === 1);
    expect((await listed('admin')).map((d) => d.id)).toEqual([kept.id]);
    await eventually(() => t.ctx.push.idle());
    expect([gone.service.requests.length, missing.service.requests.length, kept.service.requests.length]).toEqual([1, 1, 1]);
    expect(sample(await t.ctx.metrics.text(), 'svc_push_messages_total', { outcome: 'gone' })!).toBe(before + 2);
    await t.call(token('admin'), 'DELETE', `/v1/me/push-devices/${kept.id}`);
  });

  it('tries a failed push again a few times, then gives it up and keeps the device', async () => {
    const flaky = await device('admin', 201);
    flaky.service.respond((_request, index) => ({ status: index < 2 ? 503 : 201 }));
    const down = await device('admin', 500);
    const failed = sample(await t.ctx.metrics.text(), 'svc_push_messages_total', { outcome: 'failed' })!;
    const id = await notify('admin');
    await flaky.service.waitFor(3);
    await down.service.waitFor(3);
    await eventually(() => t.ctx.push.idle());
    expect(flaky.service.requests.map((r) => r.headers.topic)).toEqual([id, id, id]);
    expect(decryptPush(flaky.service.requests[2], flaky.keys)).toMatchObject({ id });
    expect(down.service.requests).toHaveLength(3);
    expect(sample(await t.ctx.metrics.text(), 'svc_push_messages_total', { outcome: 'failed' })!).toBe(failed + 1);
    const devices = new Map((await listed('admin')).map((d) => [d.id, d.lastUsedAt]));
    expect([...devices.keys()].sort()).toEqual([flaky.id, down.id].sort());
    expect(devices.get(flaky.id)).toBe(clock.now().toISOString());
    expect(devices.get(down.id)).toBeNull();
    // Reported by the device's id and its push service's host, never its endpoint URL.
    expect(faults).toEqual([`push to a device: gave up on device ${down.id} (127.0.0.1:${down.service.port}) after 3 attempts: HTTP 500`]);
  });

  it('lets a push service that hangs delay nothing: other devices, deliveries and the API go on', async () => {
    const hanging = await device('owner', 'hang');
    const endpointId = (await addEndpoint(t, `${webhooks.url}/b`)).id;
    const healthy = await startReceiver();
    services.push(healthy);
    const watcherId = (await addEndpoint(t, healthy.url, ['product.*'])).id;
    const before = first.service.requests.length;
    await autoDisable(endpointId);
    await hanging.service.waitFor(1);
    // The first device got this notification too, while the other push is still unanswered.
    await first.service.waitFor(before + 1);
    const notification = await notificationOf(userOf(t.demo, 'owner').id, endpointId);
    expect(decryptPush(first.service.requests[before], first.keys)).toMatchObject({ id: notification.id });
    // Deliveries go on: the healthy endpoint got every product event at once.
    expect((await deliveriesOf(t, watcherId)).every((d) => d.status === 'success')).toBe(true);
    await createProduct(t);
    await worker.runDue();
    expect((await deliveriesOf(t, watcherId)).at(-1)?.status).toBe('success');
    ok(await t.call(token('owner'), 'GET', '/v1/notifications'));
    expect(hanging.service.requests).toHaveLength(1);
    expect(hanging.service.abandoned).toHaveLength(0);
    expect(t.ctx.push.idle()).toBe(false);
  });
});
