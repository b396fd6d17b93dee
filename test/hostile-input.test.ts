import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, userOf, type TestApp } from './helpers/app.js';
import { expectEnvelope, rawRequest, snapshot, type Envelope } from './helpers/security.js';

/**
 * Input an attacker or a broken client sends: each gets the documented 4xx envelope with the
 * Request-Id, never a 5xx, and leaves every table of the database exactly as it was.
 */
describe('hostile input', () => {
  let t: TestApp;
  let key: string;
  let owner: string;
  let ws: string;
  let port: number;
  let routes: { method: string; path: string }[];

  beforeAll(async () => {
    // High limits: this suite is about input, not rate limits.
    t = await startTestApp({ config: { rateLimitApiKey: 1_000_000, rateLimitPat: 1_000_000, rateLimitUnauthenticated: 1_000_000 } });
    key = t.demo.workspaces[0].apiKey;
    owner = userOf(t.demo, 'owner').token;
    ws = t.demo.workspaces[0].id;
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> };
    routes = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((method) => ({ method: method.toUpperCase(), path })));
  });
  afterAll(() => t.close());

  /** Sends one request and checks the envelope and an unchanged database; returns the error. */
  async function refused(options: InjectOptions, status?: number, code?: string): Promise<Envelope> {
    const before = await snapshot(t.ctx);
    const res: LightMyRequestResponse = await t.app.inject(options);
    const label = `${options.method} ${String(options.url).slice(0, 120)}`;
    const error = expectEnvelope(res.statusCode, res.headers, res.body, label);
    if (status !== undefined) expect(res.statusCode, `${label}: ${res.body}`).toBe(status);
    if (code !== undefined) expect(error.code, label).toBe(code);
    expect(await snapshot(t.ctx), label).toEqual(before);
    return error;
  }

  const auth = (token = key) => ({ authorization: `Bearer ${token}` });
  const json = (payload: string | Buffer, token = key): InjectOptions => ({
    method: 'POST',
    url: '/v1/products',
    headers: { ...auth(token), 'content-type': 'application/json' },
    payload,
  });

  describe('bodies', () => {
    it('refuses a body over the limit with 413 PAYLOAD_TOO_LARGE', async () => {
      const big = JSON.stringify({ name: 'x', description: 'y'.repeat(t.ctx.config.bodyLimitBytes) });
      await refused(json(big), 413, 'PAYLOAD_TOO_LARGE');
      await refused({ ...json(big), url: `/v1/workspaces/${ws}/api-keys`, headers: { ...auth(owner), 'content-type': 'application/json' } }, 413);
    });

    it('refuses a streamed body over the limit, with no Content-Length, with 413 over a real socket', async () => {
      const chunk = 'a'.repeat(64 * 1024);
      const chunks = Math.ceil(t.ctx.config.bodyLimitBytes / chunk.length) + 1;
      const first = `{"name":"${chunk}`;
      let body = `${first.length.toString(16)}\r\n${first}\r\n`;
      for (let i = 1; i < chunks; i++) body += `${chunk.length.toString(16)}\r\n${chunk}\r\n`;
      body += '0\r\n\r\n';
      const before = await snapshot(t.ctx);
      const res = await rawRequest(
        port,
        `POST /v1/products HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${body}`,
      );
      expect(expectEnvelope(res.status, res.headers, res.body).code).toBe('PAYLOAD_TOO_LARGE');
      expect(res.status).toBe(413);
      expect(await snapshot(t.ctx)).toEqual(before);
    });

    it('refuses bodies that are not application/json with 415', async () => {
      for (const type of [
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/xml',
        'text/json',
        'application/jsonx',
        'application/json-patch+json',
        'application/vnd.api+json',
        'application/octet-stream',
      ]) {
        await refused({ ...json('{"name":"x"}'), headers: { ...auth(), 'content-type': type } }, 415, 'UNSUPPORTED_MEDIA_TYPE');
      }
      await refused({ method: 'POST', url: '/v1/products', headers: auth(), payload: 'name=x' }, 415, 'UNSUPPORTED_MEDIA_TYPE');
    });

    it('refuses malformed JSON with 400 VALIDATION', async () => {
      for (const text of ['{', '{"name":}', '{"name":"x",}', '[1,]', 'NaN', "{'name':'x'}", '{"name":"x"}x', '\uFEFF{"name":"x"}', '{"name":"x"', 'nul', '"\\x"', '{"name":"\\ud83"}']) {
        await refused(json(text), 400, 'VALIDATION');
      }
    });

    it('refuses deep nesting without exhausting the stack', async () => {
      const depth = 100_000;
      await refused(json('['.repeat(depth) + ']'.repeat(depth)), 400, 'VALIDATION');
      await refused(json('{"a":'.repeat(depth) + '1' + '}'.repeat(depth)), 400, 'VALIDATION');
      let nested: unknown = 'x';
      for (let i = 0; i < 40; i++) nested = { k: nested };
      await refused(json(JSON.stringify({ name: 'x', metadata: nested })), 400, 'VALIDATION');
    });

    it('refuses huge strings, wrong types and unknown fields, naming the field', async () => {
      const cases: unknown[] = [
        { name: 'x'.repeat(900_000) },
        { name: 'x', description: 'd'.repeat(100_000) },
        { name: 'x', metadata: { k: 'v'.repeat(10_000) } },
        { name: 'x', metadata: { ['k'.repeat(1000)]: 'v' } },
        { name: 'x', metadata: Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, 'v'])) },
        {},
        { name: 123 },
        { name: null },
        { name: ['x'] },
        { name: { toString: 'x' } },
        { name: true },
        { name: 'x', price: '5' },
        { name: 'x', price: { amount: '5', currency: 'USD' } },
        { name: 'x', price: { amount: 1e308, currency: 'USD' } },
        { name: 'x', price: { amount: -0.5, currency: 'USD' } },
        { name: 'x', price: { amount: 5, currency: 'usd' } },
        { name: 'x', active: 'true' },
        { name: 'x', active: 1 },
        { name: 'x', metadata: [] },
        { name: 'x', metadata: { a: { b: 'c' } } },
        { name: 'x', colour: 'red' },
        { name: 'x', price: { amount: 5, currency: 'USD', tax: 1 } },
        [],
        [{ name: 'x' }],
        'x',
        42,
        null,
        true,
      ];
      for (const body of cases) await refused(json(JSON.stringify(body)), 400, 'VALIDATION');
      const unknown = await refused(json('{"name":"x","colour":"red"}'), 400, 'VALIDATION');
      expect(unknown.message).toContain('colour');
      for (const text of ['{"name":"x","__proto__":{"admin":true}}', '{"name":"x","constructor":{"prototype":{}}}', '{"name":"x","metadata":{"__proto__":{"a":1}}}']) {
        await refused(json(text), 400, 'VALIDATION');
      }
    });

    it('refuses NUL characters, lone surrogates and invalid UTF-8 in bodies', async () => {
      for (const text of [
        '{"name":"a\\u0000b"}',
        '{"name":"x","metadata":{"k\\u0000":"v"}}',
        '{"name":"x","metadata":{"k":"\\u0000"}}',
        '{"name":"\\ud800"}',
        '{"name":"x","metadata":{"k":"\\udfff"}}',
        '{"name":"x","metadata":{"\\ud800":"v"}}',
        '{"name":"x","description":"\\udc00\\ud800"}',
      ]) {
        await refused(json(text), 400, 'VALIDATION');
      }
      for (const bytes of [
        Buffer.from([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
        Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc3]), Buffer.from('"}')]),
        Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]),
        Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]),
      ]) {
        await refused(json(bytes), 400, 'VALIDATION');
      }
    });

    it('refuses a missing, empty or non-object body on every POST route that takes one', async () => {
      const posts = routes.filter((r) => r.method === 'POST');
      expect(posts.length).toBeGreaterThan(0);
      for (const route of posts) {
        const url = route.path.replace('{workspaceId}', ws).replace(/\{(\w+)\}/g, 'nope');
        // API keys, notifications and push devices are a user's: they take a personal access token.
        const token = url.includes('/api-keys') || url.includes('/notifications') || url.startsWith('/v1/me/') ? owner : key;
        for (const options of [
          { method: 'POST', url, headers: auth(token) },
          { method: 'POST', url, headers: { ...auth(token), 'content-type': 'application/json' }, payload: '' },
          { method: 'POST', url, headers: { ...auth(token), 'content-type': 'application/json' }, payload: 'null' },
          { method: 'POST', url, headers: { ...auth(token), 'content-type': 'application/json' }, payload: '[]' },
        ] as InjectOptions[]) {
          await refused(options);
        }
      }
      // Every POST route of both mounts, a dozen bodies each: it grows with the API.
    }, 120_000);
  });

  describe('orders', () => {
    const order = (payload: unknown): InjectOptions => ({
      method: 'POST',
      url: '/v1/orders',
      headers: { ...auth(), 'content-type': 'application/json' },
      payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    });
    let productId: string;
    beforeAll(async () => {
      productId = (await t.call(key, 'POST', '/v1/products', { name: 'Orderable', price: { amount: 100, currency: 'EUR' } })).json().id;
    });

    it('refuses huge line-item arrays, naming the field', async () => {
      for (const count of [101, 10_000]) {
        const error = await refused(order({ lineItems: Array.from({ length: count }, () => ({ productId, quantity: 1 })) }), 400, 'VALIDATION');
        expect(error.details?.[0].path).toBe('body.lineItems');
      }
      await refused(order({ lineItems: Array.from({ length: 200_000 }, () => ({ productId, quantity: 1 })) }), 413, 'PAYLOAD_TOO_LARGE');
    });

    it('refuses negative, fractional, huge and mistyped quantities and product ids', async () => {
      for (const quantity of [-1, 0, 0.5, 1.5, 10_001, 1e308, -0.0001, '1', null, true, [1], { n: 1 }]) {
        const error = await refused(order({ lineItems: [{ productId, quantity }] }), 400, 'VALIDATION');
        expect(error.details?.[0].path, JSON.stringify(quantity)).toBe('body.lineItems.0.quantity');
      }
      for (const id of ['', 'x'.repeat(10_000), 1, null, ['prd_x'], { id: productId }]) {
        const error = await refused(order({ lineItems: [{ productId: id, quantity: 1 }] }), 400, 'VALIDATION');
        expect(error.details?.[0].path, JSON.stringify(id).slice(0, 40)).toBe('body.lineItems.0.productId');
      }
      for (const id of ["prd_' OR 1=1 --", 'PRD_01KDVDNA00HBT6QFA3NA92FSMH', productId.toUpperCase(), `${productId} `, 'ord_01kdvdna00hbt6qfa3na92fsmh']) {
        const error = await refused(order({ lineItems: [{ productId: id, quantity: 1 }] }), 400, 'VALIDATION');
        expect(error.message).toContain('lineItems[0].productId');
      }
      await refused(order('{"lineItems":[{"productId":"prd_\\u0000","quantity":1}]}'), 400, 'VALIDATION');
      await refused(order({ lineItems: { 0: { productId, quantity: 1 } } }), 400, 'VALIDATION');
      await refused(order({ lineItems: [{ productId, quantity: 1 }], customerEmail: `${'a'.repeat(300)}@example.com` }), 400, 'VALIDATION');
    });

    it('refuses order list filters that are not what they claim', async () => {
      for (const query of ['status=PAID', 'status=paid&status=pending', `status=${'x'.repeat(10_000)}`, 'createdGte=2016-12-31T23:59:60Z', 'createdLte=0000-01-01T00:00:00Z', 'expand=lineItems,nope']) {
        await refused({ method: 'GET', url: `/v1/orders?${query}`, headers: auth() }, 400, 'VALIDATION');
      }
    });
  });

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
