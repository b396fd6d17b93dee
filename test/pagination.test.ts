import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUBLIC_URL, pathOf, startTestApp, userOf, type TestApp } from './helpers/app.js';
import { expectError, ok } from './helpers/expect.js';

/** Pagination (docs/api.md#lists): `limit`, the page URLs, and every way a `page` token is refused. */
describe('pagination parameters and page tokens', () => {
  let t: TestApp;
  let ws1: string;
  let key1: string;
  let key2: string;
  let owner: string;
  const get = (token: string, url: string, headers?: Record<string, string>) => t.call(token, 'GET', url, undefined, headers);

  beforeAll(async () => {
    t = await startTestApp();
    ws1 = t.demo.workspaces[0].id;
    [key1, key2] = t.demo.workspaces.map((w) => w.apiKey);
    owner = userOf(t.demo, 'owner').token;
    for (let i = 0; i < 105; i++) ok(await t.call(key1, 'POST', '/v1/products', { name: `p${i}` }), 201);
    for (let i = 0; i < 3; i++) ok(await t.call(key2, 'POST', '/v1/products', { name: `q${i}` }), 201);
    for (let i = 0; i < 3; i++) ok(await t.call(owner, 'POST', `/v1/workspaces/${ws1}/api-keys`, { name: `k${i}` }), 201);
  });
  afterAll(() => t.close());

  describe('limit', () => {
    it('defaults to 20, allows 1 to 100, and the page URLs carry it', async () => {
      const page = ok(await get(key1, '/v1/products'));
      expect(page.data).toHaveLength(20);
      expect(page.previousPageUrl).toBeNull();
      expect(new URL(page.nextPageUrl).searchParams.get('limit')).toBe('20');
      expect(ok(await get(key1, '/v1/products?limit=1')).data).toHaveLength(1);
      const max = ok(await get(key1, '/v1/products?limit=100'));
      expect(max.data).toHaveLength(100);
      const rest = ok(await get(key1, pathOf(max.nextPageUrl)));
      // 105 products, plus none from the other workspace.
      expect(rest.data).toHaveLength(5);
      expect(rest.nextPageUrl).toBeNull();
    });

    it('refuses 0, negatives, over 100, non-integers and a repeated limit on every list', async () => {
      const lists: [string, string][] = [
        [key1, '/v1/products'],
        [key1, '/v1/events'],
        [owner, `/v1/workspaces/${ws1}/api-keys`],
        [owner, '/v1/organizations'],
        [owner, '/v1/workspaces'],
      ];
      for (const [token, path] of lists) {
        for (const query of ['limit=0', 'limit=-1', 'limit=101', 'limit=abc', 'limit=1.5', 'limit=', 'limit=5&limit=5', 'limit=0x10', 'limit=1e1', 'limit=%2010', 'limit=+5']) {
          const error = expectError(await get(token, `${path}?${query}`), 400, 'VALIDATION');
          expect(error.message, `${path}?${query}`).toContain('limit');
        }
      }
    });
  });

  describe('page URLs', () => {
    it('are absolute on the configured public URL whatever the Host header, and keep the path of the mount', async () => {
      const first = ok(await get(key1, '/v1/products?limit=7', { host: 'attacker.example' }));
      const next = new URL(first.nextPageUrl);
      expect(next.origin).toBe(PUBLIC_URL);
      expect(next.pathname).toBe('/v1/products');
      expect([...next.searchParams.keys()].sort()).toEqual(['limit', 'page']);
      const second = ok(await get(key1, pathOf(first.nextPageUrl)));
      expect(new URL(second.previousPageUrl).origin).toBe(PUBLIC_URL);

      const inPath = ok(await get(owner, `/v1/workspaces/${ws1}/products?limit=7`));
      expect(new URL(inPath.nextPageUrl).pathname).toBe(`/v1/workspaces/${ws1}/products`);
      expect(ok(await get(owner, pathOf(inPath.nextPageUrl))).data.map((p: { id: string }) => p.id)).toEqual(second.data.map((p: { id: string }) => p.id));
    });

    it('carry every filter and the limit', async () => {
      const first = ok(await get(key1, '/v1/events?type=product.created&subjectType=product&limit=3'));
      for (const url of [first.nextPageUrl, ok(await get(key1, pathOf(first.nextPageUrl))).previousPageUrl]) {
        const params = new URL(url).searchParams;
        expect(Object.fromEntries(params)).toMatchObject({ type: 'product.created', subjectType: 'product', limit: '3' });
        expect(params.get('page')).toBeTruthy();
      }
    });
  });

  describe('page tokens', () => {
    let token: string;
    let nextUrl: URL;
    let eventsUrl: URL;
    beforeAll(async () => {
      nextUrl = new URL(ok(await get(key1, '/v1/products?limit=7')).nextPageUrl);
      token = nextUrl.searchParams.get('page')!;
      eventsUrl = new URL(ok(await get(key1, '/v1/events?type=product.created&limit=7')).nextPageUrl);
    });

    const withPage = (path: string, page: string, extra = 'limit=7') => `${path}?${extra}&page=${encodeURIComponent(page)}`;
    const refused = async (tokenUsed: string, url: string) => {
      const error = expectError(await get(tokenUsed, url), 400, 'VALIDATION');
      expect(error.message).toMatch(/page/i);
    };

    it('accepts the token unchanged', async () => {
      ok(await get(key1, withPage('/v1/products', token)));
    });

    it('refuses a tampered or truncated token', async () => {
      const [payload, signature] = token.split('.');
      const swap = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
      const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString()) as unknown[];
      const forged = Buffer.from(JSON.stringify(['p', ...decoded.slice(1)])).toString('base64url');
      for (const bad of [
        `${swap(payload, 5)}.${signature}`,
        `${payload}.${swap(signature, 3)}`,
        `${forged}.${signature}`,
        token.slice(0, -1),
        token.slice(1),
        payload,
        `${payload}.`,
        `.${signature}`,
        `${token}.${signature}`,
        'abc',
        'x'.repeat(600),
      ]) {
        await refused(key1, withPage('/v1/products', bad));
      }
      await refused(key1, `/v1/products?limit=7&page=${encodeURIComponent(token)}&page=${encodeURIComponent(token)}`);
    });

    it('refuses a token of another list or another workspace', async () => {
      await refused(key1, withPage('/v1/events', token));
      await refused(owner, withPage(`/v1/workspaces/${ws1}/api-keys`, token));
      await refused(key1, withPage('/v1/products', eventsUrl.searchParams.get('page')!));
      await refused(key2, withPage('/v1/products', token));
      // The organizations list is returned whole, so no token fits it.
      await refused(owner, withPage('/v1/organizations', token));
      await refused(owner, '/v1/workspaces?page=abc');
    });

    it('refuses a token whose limit or filters changed', async () => {
      await refused(key1, withPage('/v1/products', token, 'limit=8'));
      await refused(key1, `/v1/products?page=${encodeURIComponent(token)}`);
      const page = eventsUrl.searchParams.get('page')!;
      for (const query of [
        'limit=7',
        'type=product.deleted&limit=7',
        'type=product.created&limit=8',
        'type=product.created&subjectType=product&limit=7',
      ]) {
        await refused(key1, withPage('/v1/events', page, query));
      }
      ok(await get(key1, withPage('/v1/events', page, 'type=product.created&limit=7')));
    });

    it('refuses a changed filter even when its text spells out the original filters', async () => {
      const first = new URL(ok(await get(key1, '/v1/events?subjectType=product&type=product.created&limit=2')).nextPageUrl);
      const changed = new URLSearchParams({ subjectType: 'product&type=product.created', limit: '2', page: first.searchParams.get('page')! });
      await refused(key1, `/v1/events?${changed}`);
    });
  });
});
