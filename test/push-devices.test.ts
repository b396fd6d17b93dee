import { createECDH } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOTIFICATION_CATALOG } from '../src/engine/notices.js';
import { MAX_DEVICES } from '../src/notifications/push/devices.js';
import { startTestApp, userOf, type TestApp } from './helpers/app.js';
import { expectError, ok } from './helpers/expect.js';
import { browserKeys, subscriptionBody } from './helpers/push.js';

/**
 * The catalog of notification types and a user's push devices are small result sets
 * (docs/api.md#lists); devices are a user's own. The app runs as in production (no
 * private targets), so registration applies the https rule and the SSRF guard.
 */
describe('notification types and push devices', () => {
  let t: TestApp;
  const token = (role: 'owner' | 'admin' | 'viewer' | 'outsider') => userOf(t.demo, role).token;
  const apiKey = () => t.demo.workspaces[0].apiKey;
  /** A public address (TEST-NET-3): accepted without a DNS look-up. */
  const endpoint = (path: string) => `https://203.0.113.7/push/${path}`;
  const register = (who: string, body: unknown) => t.call(who, 'POST', '/v1/me/push-devices', body);
  const devices = async (who: string) => ok(await t.call(who, 'GET', '/v1/me/push-devices')).data as { id: string; name: string }[];

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('serves the catalog of notification types whole: both URLs null, limit and page checked', async () => {
    for (const query of ['', '?limit=1', '?limit=100']) {
      expect(ok(await t.call(token('viewer'), 'GET', `/v1/notifications/types${query}`))).toEqual({
        data: NOTIFICATION_CATALOG.map(({ type, description }) => ({ type, description })),
        nextPageUrl: null,
        previousPageUrl: null,
      });
    }
    expect(NOTIFICATION_CATALOG.map((n) => n.type)).toContain('webhook.endpoint.auto_disabled');
    for (const query of ['limit=0', 'limit=101', 'limit=x', 'page=abc', 'page=', 'other=1']) {
      expectError(await t.call(token('owner'), 'GET', `/v1/notifications/types?${query}`), 400, 'VALIDATION');
    }
    expectError(await t.call(apiKey(), 'GET', '/v1/notifications/types'), 403, 'FORBIDDEN');
    expectError(await t.call(null, 'GET', '/v1/notifications/types'), 401, 'UNAUTHENTICATED');
  });

  it('gives the VAPID public key made once, its private half sealed under the master key', async () => {
    const { publicKey } = ok(await t.call(token('owner'), 'GET', '/v1/notifications/push-key'));
    const point = Buffer.from(publicKey, 'base64url');
    expect(point).toHaveLength(65);
    expect(point[0]).toBe(4);
    expect(ok(await t.call(token('viewer'), 'GET', '/v1/notifications/push-key')).publicKey).toBe(publicKey);
    const rows = await t.ctx.db.query<{ public_key: string; private_key_enc: string }>('SELECT public_key, private_key_enc FROM push_keys');
    expect(rows).toHaveLength(1);
    expect(rows[0].private_key_enc).toMatch(/^v1\./);
    // The sealed private key is the public key's other half.
    const ecdh = createECDH('prime256v1');
    ecdh.setPrivateKey(Buffer.from(t.ctx.secrets.decrypt(rows[0].private_key_enc), 'base64url'));
    expect(ecdh.getPublicKey().toString('base64url')).toBe(publicKey);
    expectError(await t.call(apiKey(), 'GET', '/v1/notifications/push-key'), 403, 'FORBIDDEN');
  });

  it("registers, lists and removes a user's own devices, never showing the endpoint", async () => {
    const keys = browserKeys();
    const created = await register(token('owner'), subscriptionBody(endpoint('owner-1'), keys, 'Laptop'));
    const device = ok(created, 201);
    expect(device).toEqual({ id: expect.stringMatching(/^pdv_/), name: 'Laptop', pushService: '203.0.113.7', createdAt: expect.any(String), lastUsedAt: null });
    expect(created.body).not.toContain('owner-1');

    // The same subscription again: its row, its keys and name updated.
    const again = ok(await register(token('owner'), subscriptionBody(endpoint('owner-1'), browserKeys(), 'Work laptop')), 201);
    expect(again).toMatchObject({ id: device.id, name: 'Work laptop', createdAt: device.createdAt });
    const second = ok(await register(token('owner'), { endpoint: endpoint('owner-2'), keys: { p256dh: keys.p256dh, auth: keys.auth } }), 201);
    expect(second.name).toBe('Browser');

    // A small set: every row, both URLs null, whatever the limit; limit and page still checked.
    for (const query of ['', '?limit=1']) {
      const list = ok(await t.call(token('owner'), 'GET', `/v1/me/push-devices${query}`));
      expect(list).toMatchObject({ nextPageUrl: null, previousPageUrl: null });
      expect(list.data.map((d: { id: string }) => d.id)).toEqual([device.id, second.id]);
    }
    for (const query of ['limit=0', 'limit=101', 'page=abc', 'page=']) expectError(await t.call(token('owner'), 'GET', `/v1/me/push-devices?${query}`), 400, 'VALIDATION');

    // Stored sealed: neither the endpoint nor the secret is readable in the table.
    const [row] = await t.ctx.db.query<Record<string, string>>('SELECT * FROM push_devices WHERE id = $1', [device.id]);
    expect(JSON.stringify(row)).not.toContain('owner-1');
    expect(JSON.stringify(row)).not.toContain(keys.auth);

    // Another user sees none of them and cannot remove them; an unknown or malformed id is 404 too.
    expect(await devices(token('admin'))).toEqual([]);
    for (const id of [device.id, 'pdv_00000000000000000000000000', 'nope']) {
      expectError(await t.call(token('admin'), 'DELETE', `/v1/me/push-devices/${id}`), 404, 'NOT_FOUND');
    }
    expect((await devices(token('owner'))).map((d) => d.id)).toEqual([device.id, second.id]);

    expect(ok(await t.call(token('owner'), 'DELETE', `/v1/me/push-devices/${device.id}`))).toEqual({ id: device.id, deleted: true });
    expectError(await t.call(token('owner'), 'DELETE', `/v1/me/push-devices/${device.id}`), 404, 'NOT_FOUND');
    expect((await devices(token('owner'))).map((d) => d.id)).toEqual([second.id]);
  });

  it('refuses API keys (403) and calls without a credential (401), changing nothing', async () => {
    const body = subscriptionBody(endpoint('by-key'), browserKeys());
    expectError(await t.call(apiKey(), 'GET', '/v1/me/push-devices'), 403, 'FORBIDDEN');
    expectError(await register(apiKey(), body), 403, 'FORBIDDEN');
    expectError(await t.call(apiKey(), 'DELETE', '/v1/me/push-devices/pdv_00000000000000000000000000'), 403, 'FORBIDDEN');
    expectError(await register(null as unknown as string, body), 401, 'UNAUTHENTICATED');
    const [{ count }] = await t.ctx.db.query<{ count: number }>("SELECT count(*)::int AS count FROM push_devices WHERE name = 'by-key'");
    expect(count).toBe(0);
  });

  it('checks the subscription: an https endpoint on a public host, a P-256 key and a 16-byte secret', async () => {
    const keys = browserKeys();
    const good = subscriptionBody(endpoint('viewer'), keys);
    const offCurve = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 1)]).toString('base64url');
    const cases: [unknown, string][] = [
      [{ ...good, endpoint: 'http://203.0.113.7/push/x' }, 'body.endpoint'],
      [{ ...good, endpoint: 'https://127.0.0.1/push' }, 'body.endpoint'],
      [{ ...good, endpoint: 'https://[::1]/push' }, 'body.endpoint'],
      [{ ...good, endpoint: 'https://[::ffff:10.0.0.1]/push' }, 'body.endpoint'],
      [{ ...good, endpoint: 'https://10.1.2.3/push' }, 'body.endpoint'],
      [{ ...good, endpoint: 'https://169.254.169.254/latest' }, 'body.endpoint'],
      [{ ...good, endpoint: 'https://localhost/push' }, 'body.endpoint'],
      [{ ...good, endpoint: 'https://user:pw@203.0.113.7/push' }, 'body.endpoint'],
      [{ ...good, endpoint: 'https://203.0.113.7/a b' }, 'body.endpoint'],
      [{ ...good, endpoint: 'not a url' }, 'body.endpoint'],
      [{ ...good, endpoint: 'ftp://203.0.113.7/x' }, 'body.endpoint'],
      [{ ...good, keys: { ...good.keys, p256dh: keys.ecdh.getPublicKey('base64url', 'compressed') } }, 'body.keys.p256dh'],
      [{ ...good, keys: { ...good.keys, p256dh: offCurve } }, 'body.keys.p256dh'],
      [{ ...good, keys: { ...good.keys, p256dh: `${keys.p256dh.slice(0, 20)}+/${keys.p256dh.slice(22)}` } }, 'body.keys.p256dh'],
      [{ ...good, keys: { ...good.keys, auth: Buffer.alloc(15).toString('base64url') } }, 'body.keys.auth'],
      [{ ...good, keys: { ...good.keys, auth: Buffer.alloc(17).toString('base64url') } }, 'body.keys.auth'],
      [{ ...good, keys: { ...good.keys, auth: '!!!!!!!!!!!!!!!!!!!!!!' } }, 'body.keys.auth'],
    ];
    for (const [body, path] of cases) {
      const error = expectError(await register(token('viewer'), body), 400, 'VALIDATION');
      expect(error.details?.map((d) => d.path), JSON.stringify(body)).toEqual([path]);
    }
    for (const body of [{ ...good, extra: 1 }, { endpoint: good.endpoint }, { ...good, keys: { p256dh: keys.p256dh } }, { ...good, name: '' }, { ...good, name: 'x'.repeat(101) }, [], null]) {
      expectError(await register(token('viewer'), body), 400, 'VALIDATION');
    }
    expect(await devices(token('viewer'))).toEqual([]);
    ok(await register(token('viewer'), good), 201);
  });

  it(`keeps a user to ${MAX_DEVICES} devices`, async () => {
    const keys = browserKeys();
    for (let i = 0; i < MAX_DEVICES; i++) ok(await register(token('admin'), subscriptionBody(endpoint(`admin-${i}`), keys)), 201);
    const error = expectError(await register(token('admin'), subscriptionBody(endpoint('admin-extra'), keys)), 400, 'VALIDATION');
    expect(error.message).toContain(`${MAX_DEVICES} push devices`);
    // One already registered is still updated.
    ok(await register(token('admin'), subscriptionBody(endpoint('admin-3'), keys, 'renamed')), 201);
    expect(await devices(token('admin'))).toHaveLength(MAX_DEVICES);
  });
});
