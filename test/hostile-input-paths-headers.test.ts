import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userOf, type TestApp } from './helpers/app.js';
import { hostileRequests, startHostileApp, type Route } from './helpers/hostile-input.js';
import { expectEnvelope, rawRequest, snapshot } from './helpers/security.js';

/**
 * Hostile idempotency keys, paths, ids, query values and header lines (bodies and orders:
 * hostile-input.test.ts): each gets the documented 4xx envelope with the Request-Id, never a 5xx,
 * and leaves every table of the database exactly as it was.
 */
describe('hostile input', () => {
  let t: TestApp;
  let key: string;
  let owner: string;
  let ws: string;
  let port: number;
  let routes: Route[];

  beforeAll(async () => {
    ({ t, key, owner, ws, port, routes } = await startHostileApp());
  });
  afterAll(() => t.close());

  const { refused, auth } = hostileRequests(() => t);

  describe('idempotency keys', () => {
    it('refuses an empty, too long or non-printable Idempotency-Key on every POST route with 400, storing nothing', async () => {
      const posts = routes.filter((r) => r.method === 'POST');
      expect(posts.length).toBeGreaterThan(0);
      for (const route of posts) {
        const url = route.path.replace('{workspaceId}', ws).replace(/\{(\w+)\}/g, 'nope');
        // API keys, notifications and push devices are a user's: they take a personal access token.
        const token = url.includes('/api-keys') || url.includes('/notifications') || url.startsWith('/v1/me/') ? owner : key;
        for (const bad of ['', 'k'.repeat(256), 'tab\there', 'bell\u0007', 'del\u007f', 'caf\u00e9']) {
          await refused({ method: 'POST', url, headers: { ...auth(token), 'idempotency-key': bad } }, 400, 'VALIDATION');
        }
      }
      // Control characters that HTTP itself forbids never reach a route: the parser refuses them.
      for (const bad of ['a\u0000b', 'a\rb', 'a\nb']) {
        const res = await rawRequest(port, `POST /v1/products HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nIdempotency-Key: ${bad}\r\nContent-Length: 0\r\n\r\n`);
        expect(res.status, JSON.stringify(bad)).toBe(400);
      }
      expect(await t.ctx.db.query('SELECT id FROM idempotency_keys')).toEqual([]);
    });
  });

  describe('paths and ids', () => {
    const badIds = [
      'x',
      'evt_01kdvdna00hbt6qfa3na92fsmh',
      'prd_01kdvdna00hbt6qfa3na92fsm',
      'PRD_01KDVDNA00HBT6QFA3NA92FSMH',
      'prd_01kdvdna00hbt6qfa3na92fsmhh',
      "prd_' OR 1=1 --",
      'prd_%F0%9F%92%A9',
      '%2e%2e',
      '..%2f..%2fetc%2fpasswd',
      'a'.repeat(199),
      'a'.repeat(5000),
      '%E2%80%AE',
      '0',
      '-1',
      '1e309',
    ];

    it('answers 404 NOT_FOUND for ids of the wrong shape or prefix on every route with an id', async () => {
      const withId = routes.filter((r) => /\{(?!workspaceId)\w+\}/.test(r.path));
      expect(withId.length).toBeGreaterThan(4);
      for (const route of withId) {
        for (const id of badIds) {
          const url = route.path.replace('{workspaceId}', ws).replace(/\{\w+\}/g, id);
          // Key management, a user's notifications and push devices take a personal access token; the rest an API key.
          const token = url.includes('/api-keys') || url.startsWith('/v1/notifications/') || url.startsWith('/v1/me/') ? owner : key;
          // A body that fits, where the route needs one, so that the id is what is refused.
          const body = route.method === 'PATCH' ? { active: true, name: 'x' } : route.path.endsWith('/recover') ? { since: new Date().toISOString(), dryRun: true } : undefined;
          const options: InjectOptions = { method: route.method as InjectOptions['method'], url, headers: auth(token) };
          if (body) Object.assign(options, { payload: body });
          const error = await refused(options);
          // A PATCH body that does not fit the route may be refused first; anything else is a 404.
          if (!(route.method === 'PATCH' && error.code === 'VALIDATION')) expect(error.code, `${route.method} ${url.slice(0, 80)}`).toBe('NOT_FOUND');
        }
      }
      // Two database snapshots per request, for every id-taking route of both mounts: it grows with the API.
    }, 180_000);

    it('refuses NUL and invalid UTF-8 in the path and query', async () => {
      for (const url of [
        '/v1/products/prd_%00',
        '/v1/products/%00',
        '/v1/events?type=a%00b',
        '/v1/events?subjectType=product&subjectId=%00',
        '/v1/products?page=%00',
        '/v1/products/%FF',
        '/v1/products/%E0%A4%A',
        '/v1/products/%',
        '/v1/events?type=%FF%FE',
        '/v1/events?type=%ED%A0%80',
        '/v1/events?type=%',
        '/v1/events?subjectType=%C0%AF&subjectId=x',
        '/v1/organizations?expand=%FF',
        '/v1/events/stream?type=a%00b',
        '/v1/events/stream?after=evt_%00',
        '/v1/events/stream?type=%FF%FE',
      ]) {
        await refused({ method: 'GET', url, headers: auth() });
      }
    });

    it('refuses absurd query values and duplicate parameters with 400 VALIDATION', async () => {
      for (const query of [
        'limit=1e309',
        'limit=-0',
        'limit=0',
        'limit=101',
        'limit=-1',
        'limit=abc',
        'limit=1.5',
        'limit=',
        'limit=%20',
        'limit=9007199254740993',
        'limit=Infinity',
        'limit=NaN',
        `page=${'a'.repeat(10_240)}`,
        'page=',
        'page=a.b',
        'page=..',
        'page=eyJ4IjoxfQ.c2ln',
        'limit=1&limit=2',
        'page=a&page=b',
        'unknown=1',
        'limit[]=1',
        'limit[a]=1',
      ]) {
        await refused({ method: 'GET', url: `/v1/products?${query}`, headers: auth() }, 400, 'VALIDATION');
      }
      for (const query of ['type=a&type=b', 'subjectId=x', `type=${'t'.repeat(10_000)}`]) {
        await refused({ method: 'GET', url: `/v1/events?${query}`, headers: auth() }, 400, 'VALIDATION');
      }
      for (const query of ['type=a&type=b', 'after=a&after=b', `after=${'e'.repeat(10_000)}`, `type=${'t'.repeat(10_000)}`, 'after=evt_', 'limit=1', 'type=product.']) {
        await refused({ method: 'GET', url: `/v1/events/stream?${query}`, headers: auth() }, 400, 'VALIDATION');
      }
      for (const id of ['evt_', 'x'.repeat(10_000), 'evt_01jd3x0000000000000000000%', 'prd_01jd3x0000000000000000000a']) {
        await refused({ method: 'GET', url: '/v1/events/stream', headers: { ...auth(), 'last-event-id': id } }, 400, 'VALIDATION');
      }
      for (const query of ['expand=workspaces&expand=workspaces', 'expand=nope', 'expand=workspaces.products', `expand=${','.repeat(5000)}`]) {
        await refused({ method: 'GET', url: `/v1/organizations?${query}`, headers: auth() }, 400, 'VALIDATION');
      }
    });

    it('answers an unknown route or method with the 404 envelope', async () => {
      for (const [method, url] of [
        ['GET', '/v1/nothing'],
        ['PUT', '/v1/products'],
        ['DELETE', '/v1/products'],
        ['OPTIONS', '/v1/products'],
        ['TRACE', '/v1/products'],
        ['GET', '/v2/products'],
        ['GET', '/'],
        ['GET', `/${'x'.repeat(8000)}`],
      ] as const) {
        await refused({ method, url, headers: auth() });
      }
    });
  });

  describe('headers over a raw socket', () => {
    const request = (lines: string[], body = '') => `${lines.join('\r\n')}\r\n\r\n${body}`;

    async function rawRefused(text: string | Buffer, status?: number) {
      const before = await snapshot(t.ctx);
      const res = await rawRequest(port, text);
      const error = expectEnvelope(res.status, res.headers, res.body, String(text).slice(0, 80));
      if (status !== undefined) expect(res.status).toBe(status);
      expect(await snapshot(t.ctx)).toEqual(before);
      return { res, error };
    }

    it('refuses CR, LF or NUL inside a header value and answers with the envelope', async () => {
      for (const value of ['a\rb', 'a\0b', 'a\r\rb', '\x7f\x00']) {
        const { error } = await rawRefused(request(['GET /v1/me HTTP/1.1', 'Host: x', `X-Test: ${value}`, `Authorization: Bearer ${key}`]), 400);
        expect(error.code).toBe('VALIDATION');
      }
      await rawRefused(request(['GET /v1/me HTTP/1.1', 'Host: x', `Authorization: Bearer ${key}\0`]), 400);
    });

    it('does not let a CRLF in a header value inject a response header', async () => {
      // The CRLF ends the header; the rest is a request header of its own, never echoed back.
      const { res } = await rawRefused(
        request(['GET /v1/products HTTP/1.1', 'Host: x', `Authorization: Bearer ${key}`, 'Service-Workspace-Id: wsp_x', 'Set-Cookie: session=evil', 'X-Injected: yes']),
      );
      expect(res.head.toLowerCase()).not.toContain('set-cookie');
      expect(res.head.toLowerCase()).not.toContain('x-injected');
      const other = await rawRequest(port, request(['GET /v1/me HTTP/1.1', 'Host: x', `Authorization: Bearer ${key}`, 'Connection: close']));
      expect(other.status).toBe(200);
      expect(other.head.toLowerCase()).not.toContain('set-cookie');
    });

    it('refuses a workspace header carrying an injection attempt without echoing it into headers', async () => {
      const pat = userOf(t.demo, 'owner').token;
      const { res } = await rawRefused(
        request(['GET /v1/products HTTP/1.1', 'Host: x', `Authorization: Bearer ${pat}`, 'Service-Workspace-Id: wsp_x%0d%0aSet-Cookie:%20a=b']),
        403,
      );
      expect(res.head.toLowerCase()).not.toContain('set-cookie');
    });

    it('refuses oversized headers and malformed request lines with the envelope', async () => {
      await rawRefused(request(['GET /v1/me HTTP/1.1', 'Host: x', `X-Big: ${'a'.repeat(20_000)}`, `Authorization: Bearer ${key}`]));
      await rawRefused(request(['GET /v1/me HTTP/1.1', 'Host: x', ...Array.from({ length: 3000 }, (_, i) => `X-H${i}: v`)]));
      await rawRefused(request(['GET /v1/me\0 HTTP/1.1', 'Host: x']));
      await rawRefused(request(['GET /v1/me\r HTTP/1.1', 'Host: x']));
      await rawRefused(request(['GET /v1/m e HTTP/1.1', 'Host: x']));
      await rawRefused(request(['BLAH', 'Host: x']));
      await rawRefused(request(['POST /v1/products HTTP/1.1', 'Host: x', `Authorization: Bearer ${key}`, 'Content-Type: application/json', 'Content-Length: 5', 'Content-Length: 6'], '{"a":1}'));
      await rawRefused(request(['POST /v1/products HTTP/1.1', 'Host: x', `Authorization: Bearer ${key}`, 'Content-Type: application/json', 'Transfer-Encoding: chunked'], 'zz\r\n{}\r\n0\r\n\r\n'));
      await rawRefused(request(['GET /v1/me HTTP/1.1', 'Host: x', 'Bad Header Name: v']));
    });

    it('refuses a path with a raw NUL and a query with a NUL byte', async () => {
      await rawRefused(Buffer.concat([Buffer.from('GET /v1/products/prd_'), Buffer.from([0]), Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n')]));
      await rawRefused(Buffer.concat([Buffer.from('GET /v1/events?type=a'), Buffer.from([0]), Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n')]));
      await rawRefused(Buffer.concat([Buffer.from('GET /v1/events?type=a'), Buffer.from([0xff]), Buffer.from(` HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`)]));
    });
  });
});
