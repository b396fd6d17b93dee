import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPersonalAccessToken, revokePersonalAccessToken } from '../src/account/admin.js';
import { newToken } from '../src/lib/tokens.js';
import { ManualClock, startTestApp, userOf, type TestApp } from './helpers/app.js';
import { expectError, ok } from './helpers/expect.js';

/** Credentials, roles and the 401/403 rows of docs/api.md#errors: who may call, and on which workspace. */
describe('credentials and roles', () => {
  const START = '2026-05-01T10:00:00.000Z';
  const clock = new ManualClock(Date.parse(START));
  let t: TestApp;
  let ws1: string;
  let ws2: string;
  let key1: string;
  let key2: string;
  let owner: string;
  let admin: string;
  let viewer: string;
  let outsider: string;

  beforeAll(async () => {
    // This suite fails authentication on purpose many times from one address; the per-address limit
    // on failures is not what it is about.
    t = await startTestApp({ clock, config: { rateLimitUnauthenticated: 1_000_000 } });
    [ws1, ws2] = t.demo.workspaces.map((w) => w.id);
    [key1, key2] = t.demo.workspaces.map((w) => w.apiKey);
    [owner, admin, viewer, outsider] = (['owner', 'admin', 'viewer', 'outsider'] as const).map((r) => userOf(t.demo, r).token);
  });
  afterAll(() => t.close());

  /** Replaces the character at `i` with a different one of the same alphabet: the shape stays valid. */
  const flip = (token: string, i: number) => token.slice(0, i) + (token[i] === 'a' ? 'b' : 'a') + token.slice(i + 1);

  describe('401 UNAUTHENTICATED', () => {
    const refused = async (authorization: string | undefined, url = '/v1/products') => {
      const res = await t.app.inject({ method: 'GET', url, headers: authorization === undefined ? {} : { authorization } });
      return expectError(res, 401, 'UNAUTHENTICATED');
    };

    it('refuses a missing header, another scheme and a malformed Bearer value', async () => {
      expect((await refused(undefined)).message).toMatch(/Authorization/);
      for (const header of [`Basic ${key1}`, `Token ${key1}`, key1, 'Bearer', 'Bearer ', `Bearer ${key1} extra`, `Bearer  ${key1}`]) {
        await refused(header);
      }
    });

    it('refuses tokens of the wrong shape or with a wrong checksum, on every kind of route', async () => {
      const malformed = ['svc_sk_short', key1 + 'x', key1.slice(0, -1), key1.toUpperCase(), key1.replace('svc_sk_', 'svc_xx_'), 'sk_live_' + key1.slice(7)];
      // One character flipped in the random part, and one in the checksum itself.
      const badChecksum = [flip(key1, 10), flip(key1, key1.length - 1), flip(owner, 12)];
      for (const token of [...malformed, ...badChecksum]) {
        for (const url of ['/v1/products', '/v1/me', '/v1/organizations', `/v1/workspaces/${ws1}/api-keys`]) {
          await refused(`Bearer ${token}`, url);
        }
      }
    });

    it('refuses well-formed tokens that were never issued', async () => {
      for (const token of [newToken('api_key', false), newToken('api_key', true), newToken('pat', false), newToken('pat', true)]) {
        await refused(`Bearer ${token}`);
        await refused(`Bearer ${token}`, '/v1/me');
      }
    });

    it('refuses an API key from the request after its revocation', async () => {
      const created = ok(await t.call(owner, 'POST', `/v1/workspaces/${ws1}/api-keys`, { name: 'to revoke' }), 201);
      ok(await t.call(created.key, 'GET', '/v1/products'));
      const revoked = ok(await t.call(owner, 'DELETE', `/v1/workspaces/${ws1}/api-keys/${created.id}`));
      expect(revoked).toMatchObject({ id: created.id, revokedAt: clock.now().toISOString() });
      await refused(`Bearer ${created.key}`);
      await refused(`Bearer ${created.key}`, '/v1/me');
    });

    it('refuses a revoked personal access token and an expired one', async () => {
      const userId = userOf(t.demo, 'owner').id;
      const pat = await createPersonalAccessToken(t.ctx.db, { userId, name: 'short-lived', test: false, expiresAt: new Date(clock.now().getTime() + 60_000) }, clock.now());
      ok(await t.call(pat.token, 'GET', '/v1/me'));
      clock.advance(59_999);
      ok(await t.call(pat.token, 'GET', '/v1/me'));
      clock.advance(1);
      await refused(`Bearer ${pat.token}`, '/v1/me');

      const past = await createPersonalAccessToken(t.ctx.db, { userId, name: 'expired', test: false, expiresAt: new Date(clock.now().getTime() - 1) }, clock.now());
      await refused(`Bearer ${past.token}`, '/v1/me');

      const other = await createPersonalAccessToken(t.ctx.db, { userId, name: 'to revoke', test: false }, clock.now());
      ok(await t.call(other.token, 'GET', '/v1/me'));
      // Tokens are revoked by `svc admin revoke-token`, another process: its NOTIFY reaches this one's
      // credential cache at commit, so the refusal follows within moments rather than on the same tick.
      await revokePersonalAccessToken(t.ctx.db, other.id, clock.now());
      const deadline = Date.now() + 5_000;
      while ((await t.call(other.token, 'GET', '/v1/me')).statusCode === 200 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      await refused(`Bearer ${other.token}`, '/v1/me');
    });

    it('authenticates by the matched route, so a percent-encoded /v1 path is no way around it', async () => {
      // `/%761/products` routes to /v1/products; the credential check must not depend on the raw spelling.
      for (const url of ['/%761/products', '/%76%31/me', '/%761/organizations', `/%761/workspaces/${ws1}/api-keys`]) {
        await refused(undefined, url);
      }
      expect(ok(await t.call(key1, 'GET', '/%761/me')).credential.workspaceId).toBe(ws1);
    });

    it('authenticates each request of a keep-alive connection by its own header', async () => {
      // One connection carrying several credentials in turn, as a proxy pooling clients would.
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      let connections = 0;
      t.app.server.on('connection', () => connections++);
      const pool = new Pool(`http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`, { connections: 1 });
      const me = async (authorization?: string) => {
        const res = await pool.request({ method: 'GET', path: '/v1/me', headers: authorization === undefined ? {} : { authorization } });
        return { status: res.statusCode, body: (await res.body.json()) as { credential?: { workspaceId: string } } };
      };
      try {
        const created = ok(await t.call(owner, 'POST', `/v1/workspaces/${ws1}/api-keys`, { name: 'one connection' }), 201);
        for (const [token, workspace] of [[key1, ws1], [key2, ws2], [created.key, ws1], [key1, ws1], [key2, ws2]]) {
          const res = await me(`Bearer ${token}`);
          expect(res.status).toBe(200);
          expect(res.body.credential?.workspaceId).toBe(workspace);
        }
        expect((await me(`Bearer ${flip(key1, 10)}`)).status).toBe(401);
        expect((await me()).status).toBe(401);
        // Revoked between two requests that send the same header on the same connection.
        expect((await me(`Bearer ${created.key}`)).status).toBe(200);
        ok(await t.call(owner, 'DELETE', `/v1/workspaces/${ws1}/api-keys/${created.id}`));
        expect((await me(`Bearer ${created.key}`)).status).toBe(401);
        expect(connections).toBe(1);
      } finally {
        await pool.close();
      }
    });
  });

  describe('credential kinds', () => {
    it('accepts test API keys and test tokens and reports them as test credentials', async () => {
      const testKey = t.demo.workspaces[0].testApiKey;
      expect(testKey).toMatch(/^svc_sk_test_/);
      ok(await t.call(testKey, 'GET', '/v1/products'));
      expect(ok(await t.call(testKey, 'GET', '/v1/me')).credential).toMatchObject({ type: 'api_key', test: true, workspaceId: ws1 });

      const pat = await createPersonalAccessToken(t.ctx.db, { userId: userOf(t.demo, 'admin').id, name: 'test', test: true }, clock.now());
      expect(pat.token).toMatch(/^svc_pat_test_/);
      ok(await t.call(pat.token, 'GET', '/v1/products', undefined, { 'service-workspace-id': ws1 }));
      expect(ok(await t.call(pat.token, 'GET', '/v1/me')).credential).toMatchObject({ type: 'personal_access_token', id: pat.id, test: true });
    });

    it('stores only the SHA-256 of a credential', async () => {
      const key = t.demo.workspaces[0].apiKey;
      const [row] = await t.ctx.db.query<{ row: string }>('SELECT to_jsonb(k)::text AS row FROM api_keys k WHERE token_hash = $1', [createHash('sha256').update(key).digest('hex')]);
      expect(row).toBeDefined();
      expect(row.row).not.toContain(key.slice(12));
      const tokens = await t.ctx.db.query<{ row: string }>('SELECT to_jsonb(p)::text AS row FROM personal_access_tokens p');
      expect(tokens.some((r) => r.row.includes(owner.slice(12)))).toBe(false);
      expect(tokens.some((r) => r.row.includes(createHash('sha256').update(owner).digest('hex')))).toBe(true);
    });

    it('GET /v1/me describes a token with its user and a key without one', async () => {
      const me = userOf(t.demo, 'viewer');
      const forPat = ok(await t.call(viewer, 'GET', '/v1/me'));
      // The demo set was created at the clock's start.
      expect(forPat.user).toEqual({ id: me.id, email: me.email, name: me.name, createdAt: START });
      expect(forPat.credential).toEqual({ type: 'personal_access_token', id: expect.stringMatching(/^pat_/), test: false, workspaceId: null });

      const forKey = ok(await t.call(key2, 'GET', '/v1/me'));
      expect(forKey).toEqual({ user: null, credential: { type: 'api_key', id: expect.stringMatching(/^key_/), test: false, workspaceId: ws2 } });
    });
  });

  describe('roles and workspace binding', () => {
    let productId: string;
    beforeAll(async () => {
      productId = ok(await t.call(key1, 'POST', '/v1/products', { name: 'Scarf' }), 201).id;
    });

    it("refuses a Viewer's writes with 403 naming the permission, before looking at the body", async () => {
      const path = `/v1/workspaces/${ws1}/products`;
      ok(await t.call(viewer, 'GET', path));
      ok(await t.call(viewer, 'GET', `${path}/${productId}`));
      for (const [method, url, body] of [
        ['POST', path, { name: 'Nope' }],
        ['POST', path, { name: 42 }],
        ['PATCH', `${path}/${productId}`, { name: 'Renamed' }],
        ['DELETE', `${path}/${productId}`, undefined],
      ] as const) {
        const error = expectError(await t.call(viewer, method, url, body), 403, 'FORBIDDEN');
        expect(error.message).toContain('workspace:products:write');
      }
      expect(ok(await t.call(key1, 'GET', `/v1/products/${productId}`)).name).toBe('Scarf');
      const keys = expectError(await t.call(viewer, 'GET', `/v1/workspaces/${ws1}/api-keys`), 403, 'FORBIDDEN');
      expect(keys.message).toContain('workspace:api_keys:manage');
    });

    it('lets Owner and Admin read and write where they are members, and refuses non-members', async () => {
      for (const ws of [ws1, ws2]) ok(await t.call(owner, 'POST', `/v1/workspaces/${ws}/products`, { name: `implicit in ${ws}` }), 201);
      ok(await t.call(admin, 'POST', `/v1/workspaces/${ws1}/products`, { name: 'by admin' }), 201);
      ok(await t.call(admin, 'GET', '/v1/products', undefined, { 'service-workspace-id': ws1 }));
      expectError(await t.call(admin, 'GET', `/v1/workspaces/${ws2}/products`), 403, 'FORBIDDEN');
      expectError(await t.call(admin, 'POST', '/v1/products', { name: 'x' }, { 'service-workspace-id': ws2 }), 403, 'FORBIDDEN');
      const outsiderWs = t.demo.outsiderOrganization.workspaceId;
      ok(await t.call(outsider, 'GET', `/v1/workspaces/${outsiderWs}/products`));
      for (const ws of [ws1, ws2]) {
        const error = expectError(await t.call(outsider, 'GET', `/v1/workspaces/${ws}/products`), 403, 'FORBIDDEN');
        expect(error.message).toContain(ws);
        expectError(await t.call(outsider, 'GET', '/v1/events', undefined, { 'service-workspace-id': ws }), 403, 'FORBIDDEN');
      }
      for (const bogus of ['wsp_01aaaaaaaaaaaaaaaaaaaaaaaa', 'nonsense']) {
        expectError(await t.call(owner, 'GET', `/v1/workspaces/${bogus}/products`), 403, 'FORBIDDEN');
      }
    });

    it('needs Service-Workspace-Id for a token on /v1/<resource>, and path and header must agree', async () => {
      for (const url of ['/v1/products', '/v1/events', `/v1/products/${productId}`]) {
        const error = expectError(await t.call(owner, 'GET', url), 400, 'VALIDATION');
        expect(error.message).toContain('Service-Workspace-Id');
      }
      ok(await t.call(owner, 'GET', '/v1/products', undefined, { 'service-workspace-id': ws1 }));
      ok(await t.call(owner, 'GET', `/v1/workspaces/${ws1}/products`, undefined, { 'service-workspace-id': ws1 }));
      for (const token of [owner, key1]) {
        const error = expectError(await t.call(token, 'GET', `/v1/workspaces/${ws1}/products`, undefined, { 'service-workspace-id': ws2 }), 400, 'VALIDATION');
        expect(error.message).toContain(ws2);
      }
    });

    it('binds an API key to its workspace: its own path and header work, another workspace is 403', async () => {
      ok(await t.call(key1, 'GET', `/v1/workspaces/${ws1}/products`));
      ok(await t.call(key1, 'GET', '/v1/products', undefined, { 'service-workspace-id': ws1 }));
      expectError(await t.call(key1, 'GET', `/v1/workspaces/${ws2}/products`), 403, 'FORBIDDEN');
      expectError(await t.call(key1, 'POST', '/v1/products', { name: 'x' }, { 'service-workspace-id': ws2 }), 403, 'FORBIDDEN');
      expectError(await t.call(key1, 'GET', `/v1/workspaces/${ws2}/events`), 403, 'FORBIDDEN');
    });
  });

  describe('account and API key routes', () => {
    it('lists the workspaces of each caller, whole', async () => {
      const ids = async (token: string) => {
        const list = ok(await t.call(token, 'GET', '/v1/workspaces'));
        expect(list).toMatchObject({ nextPageUrl: null, previousPageUrl: null });
        return list.data.map((w: { id: string; role: string; implicit: boolean }) => `${w.id}:${w.role}:${w.implicit}`).sort();
      };
      expect(await ids(owner)).toEqual([`${ws1}:owner:true`, `${ws2}:owner:true`].sort());
      expect(await ids(admin)).toEqual([`${ws1}:admin:false`]);
      expect(await ids(viewer)).toEqual([`${ws1}:viewer:false`]);
      expect(await ids(outsider)).toEqual([`${t.demo.outsiderOrganization.workspaceId}:owner:true`]);
      expect(await ids(key2)).toEqual([`${ws2}:api_key:false`]);
    });

    it('creates a key shown once, lists prefixes only, and revokes it', async () => {
      const base = `/v1/workspaces/${ws1}/api-keys`;
      const live = ok(await t.call(admin, 'POST', base, { name: 'CI' }), 201);
      const test = ok(await t.call(owner, 'POST', base, { name: 'CI test', test: true }), 201);
      expect(live.key).toMatch(/^svc_sk_(?!test_)/);
      expect(test.key).toMatch(/^svc_sk_test_/);
      for (const created of [live, test]) {
        expect(created).toMatchObject({ id: expect.stringMatching(/^key_/), workspaceId: ws1, revokedAt: null });
        expect(created.key.startsWith(created.prefix)).toBe(true);
        expect(ok(await t.call(created.key, 'GET', '/v1/me')).credential).toMatchObject({ workspaceId: ws1, test: created === test });
      }

      const listed = await t.call(owner, 'GET', `${base}?limit=100`);
      expect(listed.body).not.toContain(live.key);
      expect(listed.body).not.toContain(test.key);
      const item = ok(listed).data.find((k: { id: string }) => k.id === live.id);
      expect(item).toEqual({ ...live, key: undefined });
      expect('key' in item).toBe(false);

      const revoked = ok(await t.call(owner, 'DELETE', `${base}/${live.id}`));
      expect(revoked.revokedAt).not.toBeNull();
      expect(ok(await t.call(owner, 'DELETE', `${base}/${live.id}`)).revokedAt).toBe(revoked.revokedAt);
      expect(ok(await t.call(owner, 'GET', `${base}?limit=100`)).data.find((k: { id: string }) => k.id === live.id).revokedAt).toBe(revoked.revokedAt);
      expectError(await t.call(live.key, 'GET', '/v1/products'), 401, 'UNAUTHENTICATED');
      for (const id of ['key_01aaaaaaaaaaaaaaaaaaaaaaaa', 'nope']) expectError(await t.call(owner, 'DELETE', `${base}/${id}`), 404, 'NOT_FOUND');
      // The owner may manage keys in the second workspace, but not reach the first one's keys from there.
      expectError(await t.call(owner, 'DELETE', `/v1/workspaces/${ws2}/api-keys/${test.id}`), 404, 'NOT_FOUND');
      ok(await t.call(test.key, 'GET', '/v1/products'));
    });

    it('does not let an API key manage API keys, not even of its own workspace', async () => {
      const keyId = ok(await t.call(owner, 'GET', `/v1/workspaces/${ws1}/api-keys`)).data.find((k: { revokedAt: string | null }) => k.revokedAt === null).id;
      for (const [method, url, body] of [
        ['GET', `/v1/workspaces/${ws1}/api-keys`, undefined],
        ['POST', `/v1/workspaces/${ws1}/api-keys`, { name: 'sneaky' }],
        ['DELETE', `/v1/workspaces/${ws1}/api-keys/${keyId}`, undefined],
      ] as const) {
        const error = expectError(await t.call(key1, method, url, body), 403, 'FORBIDDEN');
        expect(error.message).toContain('workspace:api_keys:manage');
      }
      expect(ok(await t.call(owner, 'GET', `/v1/workspaces/${ws1}/api-keys`)).data.find((k: { id: string }) => k.id === keyId).revokedAt).toBeNull();
    });
  });
});
