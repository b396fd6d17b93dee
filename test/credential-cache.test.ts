import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../src/server/app.js';
import type { AppContext } from '../src/server/context.js';
import { openPostgres } from '../src/db/postgres.js';
import { createContext } from '../src/server/runtime.js';
import { createPersonalAccessToken, revokePersonalAccessToken } from '../src/account/admin.js';
import { revokeApiKey } from '../src/api-keys/store.js';
import { ManualClock, startTestApp, testConfig, userOf, type TestApp } from './helpers/app.js';
import { POSTGRES_URL } from './helpers/db.js';

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

/**
 * A look-up that read the credential before its revocation committed, and answers after the
 * process heard of it, must not put the stale "valid" into the cache. The answer is held in the
 * test's hands (the service's database, with the credential look-up's answer kept until released).
 */
describe('credential cache, a look-up racing a revocation', () => {
  let t: TestApp;
  let ctx: AppContext;
  let app: App;
  /** Armed by lookUpHeld(): the next credential look-up's answer waits for `open`. */
  let held: { reached: () => void; open: Promise<void> } | null = null;

  beforeAll(async () => {
    t = await startTestApp();
    const db = await openPostgres({ url: POSTGRES_URL, schema: t.testDb.schema });
    const gated = new Proxy(db, {
      get(target, prop, receiver) {
        if (prop !== 'query') return Reflect.get(target, prop, receiver);
        return async (sql: string, params?: unknown[]) => {
          const rows = await target.query(sql, params);
          const gate = held;
          if (gate && sql.includes('FROM api_keys WHERE token_hash')) {
            held = null;
            gate.reached();
            await gate.open;
          }
          return rows;
        };
      },
    });
    ctx = createContext(testConfig(), gated, randomBytes(32));
    app = await buildApp(ctx);
  });
  afterAll(async () => {
    await app.close();
    await ctx.rateLimits.close();
    await ctx.db.close();
    await t.close();
  });

  const call = (key: string) => app.inject({ method: 'GET', url: '/v1/products', headers: { authorization: `Bearer ${key}` } });

  /** Starts a request, and resolves once its look-up has read the credential and its answer is held. */
  async function lookUpHeld(key: string): Promise<{ response: ReturnType<typeof call>; release: () => void }> {
    let release!: () => void;
    const open = new Promise<void>((resolve) => (release = resolve));
    const reached = new Promise<void>((resolve) => (held = { reached: resolve, open }));
    const response = call(key);
    await reached;
    return { response, release };
  }

  async function newKey(name: string): Promise<{ id: string; key: string }> {
    const owner = userOf(t.demo, 'owner').token;
    const created = (await t.call(owner, 'POST', `/v1/workspaces/${t.demo.workspaces[0].id}/api-keys`, { name })).json();
    return { id: created.id, key: created.key };
  }

  it('a revocation heard while the answer is on its way: the answer is not cached, the next request is refused', async () => {
    const { id, key } = await newKey('raced by a revoke');
    const { response, release } = await lookUpHeld(key);
    // Revoked by another process; this one hears of it (NOTIFY) while the look-up's "valid" is held.
    await revokeApiKey(t.testDb.db, null, id, new Date());
    // The NOTIFY reaches this process's listener within moments.
    await new Promise((resolve) => setTimeout(resolve, 500));
    release();
    // The request that began before the revoke is answered from what it read.
    expect((await response).statusCode).toBe(200);
    expect((await call(key)).statusCode).toBe(401);
  });

  it('a flush while the look-up is in flight: its answer is not cached', async () => {
    const { id, key } = await newKey('raced by a flush');
    const { response, release } = await lookUpHeld(key);
    // What the revocation listener does when its connection drops (a revoke may have been missed).
    ctx.credentials.clear();
    // Revoked behind the cache's back, as a revoke made while the listener was away would be.
    await t.testDb.db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [id]);
    release();
    expect((await response).statusCode).toBe(200);
    expect((await call(key)).statusCode).toBe(401);
  });
});
