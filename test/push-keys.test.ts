import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/lib/ids.js';
import { SecretBox } from '../src/lib/secretbox.js';
import { saveDevice } from '../src/notifications/push/devices.js';
import { rotateMasterKey } from '../src/server/master-key.js';
import { createContext } from '../src/server/runtime.js';
import { startTestApp, userOf, type TestApp } from './helpers/app.js';
import { eventually } from './helpers/delivery.js';
import { ok } from './helpers/expect.js';
import { sample } from './helpers/metrics.js';
import { browserKeys, decryptPush, subscriptionBody, verifyVapid } from './helpers/push.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

const PUSH = { retryDelaysMs: [20, 20], timeoutMs: 5_000 };

/** A notification for `userId` written as the engine writes them. */
async function notify(t: TestApp, userId: string): Promise<string> {
  const id = newId('ntf', t.clock.now());
  await t.ctx.db.query(
    `INSERT INTO notifications (id, user_id, workspace_id, type, subject, message, created_at)
     VALUES ($1, $2, $3, 'webhook.endpoint.auto_disabled', NULL, 'An endpoint was disabled.', $4)`,
    [id, userId, t.demo.workspaces[0].id, t.clock.now()],
  );
  return id;
}

/** The VAPID key and the subscriptions are secrets under the master key; production sends over https to public hosts only. */
describe('push keys and subscriptions at rest', () => {
  let t: TestApp;
  let service: Receiver;
  const masterKey = randomBytes(32);

  beforeAll(async () => {
    t = await startTestApp({ masterKey, config: { allowPrivateTargets: true }, push: PUSH });
    service = await startReceiver(() => ({ status: 201 }));
  });
  afterAll(async () => {
    await t?.close();
    await service?.close();
  });

  it('re-encrypts the VAPID private key and every subscription on rotate-master-key; pushes go on under the new key', async () => {
    const owner = userOf(t.demo, 'owner');
    const keys = browserKeys();
    ok(await t.call(owner.token, 'POST', '/v1/me/push-devices', subscriptionBody(`${service.url}/push/rotated`, keys)), 201);
    const { publicKey } = ok(await t.call(owner.token, 'GET', '/v1/notifications/push-key'));
    const sealed = async () => (await t.ctx.db.query<{ v: string }>('SELECT private_key_enc AS v FROM push_keys UNION ALL SELECT subscription_enc FROM push_devices')).map((r) => r.v);
    const before = await sealed();

    const next = randomBytes(32);
    const { reencrypted } = await rotateMasterKey(t.ctx.db, new SecretBox(masterKey), new SecretBox(next), t.clock.now());
    expect(reencrypted).toMatchObject({ 'push_keys.private_key_enc': 1, 'push_devices.subscription_enc': 1 });
    const after = await sealed();
    expect(after).toHaveLength(2);
    for (const value of after) {
      expect(before).not.toContain(value);
      expect(() => new SecretBox(masterKey).decrypt(value)).toThrow();
    }

    // A process started with the new key signs with the same VAPID key and reaches the same device.
    const restarted = createContext(t.ctx.config, t.ctx.db, next, t.clock, { push: PUSH });
    try {
      expect(await restarted.push.keys.publicKey()).toBe(publicKey);
      const id = await notify(t, owner.id);
      restarted.push.wake();
      await service.waitFor(1);
      verifyVapid(service.requests[0].headers.authorization, publicKey);
      expect(decryptPush(service.requests[0], keys)).toMatchObject({ id, message: 'An endpoint was disabled.' });
    } finally {
      await restarted.push.stop();
      await restarted.rateLimits.close();
    }
  });
});

describe('push services in production: https to public hosts only', () => {
  let t: TestApp;
  let service: Receiver;

  beforeAll(async () => {
    t = await startTestApp({ push: PUSH });
    service = await startReceiver(() => ({ status: 201 }));
  });
  afterAll(async () => {
    await t?.close();
    await service?.close();
  });

  it('sends nothing to a stored subscription on plain http or on a private address, whatever got it stored', async () => {
    expect(t.ctx.config.allowPrivateTargets).toBe(false);
    const owner = userOf(t.demo, 'owner');
    const keys = browserKeys();
    const { port } = service;
    for (const endpoint of [`http://127.0.0.1:${port}/push`, `https://127.0.0.1:${port}/push`, `https://[::ffff:127.0.0.1]:${port}/push`]) {
      await saveDevice(t.ctx.db, t.ctx.secrets, { userId: owner.id, name: endpoint, subscription: { endpoint, p256dh: keys.p256dh, auth: keys.auth } }, t.clock.now());
    }
    const failed = sample(await t.ctx.metrics.text(), 'svc_push_messages_total', { outcome: 'failed' })!;
    await notify(t, owner.id);
    t.ctx.push.wake();
    await eventually(async () => sample(await t.ctx.metrics.text(), 'svc_push_messages_total', { outcome: 'failed' }) === failed + 3);
    expect(service.connections).toBe(0);
    // Refused before sending is not "gone": the devices stay for their owner to remove.
    expect(ok(await t.call(owner.token, 'GET', '/v1/me/push-devices')).data).toHaveLength(3);
  });
});
