import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPersonalAccessToken, revokePersonalAccessToken } from '../src/admin/store.js';
import { revokeApiKey } from '../src/api-keys/store.js';
import { ManualClock, startTestApp, userOf, type TestApp } from './helpers/app.js';

async function eventually(check: () => Promise<boolean>, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('not reached in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('credential cache', () => {
  let t: TestApp;
  let clock: ManualClock;
  beforeAll(async () => {
    clock = new ManualClock(Date.parse('2026-03-01T00:00:00.000Z'));
    t = await startTestApp({ clock });
  });
  afterAll(() => t.close());

  it('serves a used key from the cache without a look-up, and forgets it the moment it is revoked here', async () => {
    const owner = userOf(t.demo, 'owner').token;
    const ws = t.demo.workspaces[0].id;
    const created = (await t.call(owner, 'POST', `/v1/workspaces/${ws}/api-keys`, { name: 'cached' })).json();
    expect((await t.call(created.key, 'GET', '/v1/products')).statusCode).toBe(200);

    // Revoked behind the API's back without a NOTIFY reaching it: the cache still answers...
    await t.testDb.db.query('UPDATE api_keys SET revoked_at = $2 WHERE id = $1', [created.id, clock.now()]);
    expect((await t.call(created.key, 'GET', '/v1/products')).statusCode).toBe(200);
    // ...while revoking through the API takes effect on the very next request.
    await t.testDb.db.query('UPDATE api_keys SET revoked_at = NULL WHERE id = $1', [created.id]);
    expect((await t.call(owner, 'DELETE', `/v1/workspaces/${ws}/api-keys/${created.id}`)).statusCode).toBe(200);
    expect((await t.call(created.key, 'GET', '/v1/products')).statusCode).toBe(401);
  });

  it('drops credentials revoked by another process when the revocation NOTIFY arrives', async () => {
    const viewer = userOf(t.demo, 'viewer');
    const pat = await createPersonalAccessToken(t.testDb.db, { userId: viewer.id, name: 'elsewhere', test: false }, clock.now());
    expect((await t.call(pat.token, 'GET', '/v1/me')).statusCode).toBe(200);
    // What `svc admin revoke-token` does from its own process: the same statement, with its NOTIFY.
    expect(await revokePersonalAccessToken(t.testDb.db, pat.id, clock.now())).toBe(true);
    await eventually(async () => (await t.call(pat.token, 'GET', '/v1/me')).statusCode === 401);

    const key = t.demo.workspaces[1].testApiKey;
    expect((await t.call(key, 'GET', '/v1/products')).statusCode).toBe(200);
    const [{ id }] = await t.testDb.db.query<{ id: string }>('SELECT id FROM api_keys WHERE workspace_id = $1 AND test', [t.demo.workspaces[1].id]);
    await revokeApiKey(t.testDb.db, null, id, clock.now());
    await eventually(async () => (await t.call(key, 'GET', '/v1/products')).statusCode === 401);
  });

  it('refuses a cached token once the service clock passes its expiry', async () => {
    const admin = userOf(t.demo, 'admin');
    const pat = await createPersonalAccessToken(t.testDb.db, { userId: admin.id, name: 'short', test: false, expiresAt: new Date(clock.now().getTime() + 3_600_000) }, clock.now());
    expect((await t.call(pat.token, 'GET', '/v1/me')).statusCode).toBe(200);
    clock.advance(3_600_001);
    expect((await t.call(pat.token, 'GET', '/v1/me')).statusCode).toBe(401);
  });
});
