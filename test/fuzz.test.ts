import fc from 'fast-check';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, userOf, type TestApp } from './helpers/app.js';
import { anyJson, hostileString, operations, SchemaArbitraries, type OpenApiDoc, type Operation } from './helpers/openapi-fuzz.js';
import { declaredStatuses } from './helpers/documented.js';
import { expectEnvelope, snapshot } from './helpers/security.js';
import { injectStream } from './helpers/sse.js';

/**
 * Property-based fuzzing of every operation in GET /openapi.json, with the demo set's credentials:
 * no response is a 5xx, every status is one the operation reached declares, every 4xx is the
 * documented envelope whose requestId is the Request-Id header, and a 4xx leaves every table
 * exactly as it was. `npm test` runs a size that takes about a
 * minute per engine; a larger run is `FUZZ_RUNS=5000 npx vitest run test/fuzz.test.ts`, and
 * `FUZZ_SEED=<seed>` replays a reported failure.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 1500);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);

/** Percent-encodes the UTF-8 bytes of any string (lone surrogates become U+FFFD, as a client would send). */
const encode = (text: string) =>
  [...Buffer.from(text, 'utf8')].map((b) => (/[A-Za-z0-9._~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0').toUpperCase()}`)).join('');

/** Header values must be visible ASCII to be sent at all. */
const headerSafe = (text: string) => text.replace(/[^\x20-\x7e]/g, '').trim();

const ID_PREFIX: Record<string, string> = { productId: 'prd', orderId: 'ord', eventId: 'evt', endpointId: 'whe', deliveryId: 'whd', recoveryId: 'whr', keyId: 'key', workspaceId: 'wsp', notificationId: 'ntf' };
const randomId = (prefix: string) => fc.stringMatching(new RegExp(`^${prefix}_[0-9a-hjkmnp-tv-z]{26}$`));

interface FuzzRequest {
  options: InjectOptions;
  label: string;
}

describe('fuzzing every route of the OpenAPI document', () => {
  let t: TestApp;
  let ops: Operation[];
  let declared: ReturnType<typeof declaredStatuses>;
  let arbitraries: SchemaArbitraries;
  let credentials: { name: string; token: string | null }[];
  let workspaces: string[];
  let ids: Record<string, string[]>;

  beforeAll(async () => {
    t = await startTestApp({ config: { rateLimitApiKey: 1_000_000, rateLimitPat: 1_000_000, rateLimitUnauthenticated: 1_000_000 } });
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json() as OpenApiDoc;
    ops = operations(doc).filter((op) => op.path.startsWith('/v1/'));
    declared = declaredStatuses(doc);
    const key = t.demo.workspaces[0].apiKey;
    const owner = userOf(t.demo, 'owner').token;
    workspaces = [...t.demo.workspaces.map((w) => w.id), t.demo.outsiderOrganization.workspaceId];

    // Real resources, so that generated requests also reach the code behind a successful look-up.
    const post = async (url: string, body: unknown, token = key) => {
      const res = await t.call(token, 'POST', url, body);
      return res.statusCode < 300 ? (res.json() as Record<string, any>) : null;
    };
    const product = await post('/v1/products', { name: 'Fuzzed', price: { amount: 100, currency: 'EUR' } });
    const order = product ? await post('/v1/orders', { lineItems: [{ productId: product.id, quantity: 2 }] }) : null;
    const catalog = (await t.call(key, 'GET', '/v1/webhooks/endpoints/event-types')).json()?.data?.map((e: { type: string }) => e.type) ?? [];
    const endpoint = await post('/v1/webhooks/endpoints', { url: 'https://example.com/hook', subscribedEvents: ['product.*'] });
    const sent = endpoint ? await post(`/v1/webhooks/endpoints/${endpoint.id}/send-test-event`, undefined) : null;
    const recovery = endpoint ? await post(`/v1/webhooks/endpoints/${endpoint.id}/recover`, { since: new Date(Date.now() - 3_600_000).toISOString() }) : null;
    const spare = await post(`/v1/workspaces/${workspaces[0]}/api-keys`, { name: 'fuzz spare' }, owner);
    const events = (await t.call(key, 'GET', '/v1/events')).json().data as { id: string }[];
    ids = {
      productId: product ? [product.id] : [],
      orderId: order ? [order.id] : [],
      eventId: events.map((e) => e.id).slice(0, 2),
      endpointId: endpoint ? [endpoint.id] : [],
      deliveryId: sent?.deliveryId ? [sent.deliveryId] : [],
      recoveryId: recovery ? [recovery.id] : [],
      keyId: spare ? [spare.id] : [],
    };
    const known = (values: unknown[]) => (values.length ? fc.constantFrom(...values) : fc.constant(undefined));
    arbitraries = new SchemaArbitraries(doc, {
      url: fc.constantFrom('https://example.com/hook', 'https://example.org/a?b=c', 'http://127.0.0.1/x', 'https://169.254.169.254/latest', 'ftp://x', 'not a url'),
      subscribedEvents: fc.array(known([...catalog, 'product.*', '*', 'nope.*']), { minLength: 1, maxLength: 3 }),
      eventType: known(catalog),
      type: known(catalog),
      subjectType: fc.constantFrom('product', 'order', 'webhook_endpoint'),
      subjectId: known([...ids.productId, ...ids.orderId, ...ids.endpointId]),
      endpointId: known(ids.endpointId),
      currency: fc.constantFrom('EUR', 'USD', 'JPY', 'XXX', 'ABC'),
      productId: known(ids.productId),
      customerEmail: fc.constantFrom('ada@example.com', null, 'not an address'),
      expand: fc.constantFrom('workspaces', 'workspaces,workspaces', ' workspaces ', 'nope', 'workspaces.products', 'lineItems', 'lineItems.product'),
    });

    credentials = [
      { name: 'api key', token: key },
      { name: 'api key', token: key },
      { name: 'api key of workspace 2', token: t.demo.workspaces[1].apiKey },
      { name: 'test api key', token: t.demo.workspaces[0].testApiKey },
      ...(['owner', 'owner', 'admin', 'viewer', 'outsider'] as const).map((role) => ({ name: role, token: userOf(t.demo, role).token })),
      { name: 'none', token: null },
      { name: 'well-formed unknown', token: 'svc_sk_' + 'A'.repeat(36) },
    ];
  });
  afterAll(() => t.close());

  function pathValue(name: string, clean: boolean): fc.Arbitrary<string> {
    const prefix = ID_PREFIX[name];
    const real = name === 'workspaceId' ? workspaces : (ids[name] ?? Object.values(ids).flat());
    if (clean && real.length) return fc.constant(real[0]);
    const options: fc.WeightedArbitrary<string>[] = [
      { arbitrary: hostileString.map(encode), weight: 1 },
      { arbitrary: fc.constantFrom('%FF', '%', '%00', '%E0%A4%A', '..', '.', 'a'.repeat(201)), weight: 1 },
    ];
    if (real.length) options.push({ arbitrary: fc.constantFrom(...real), weight: 6 });
    if (prefix) options.push({ arbitrary: randomId(prefix), weight: 2 }, { arbitrary: randomId(prefix === 'prd' ? 'evt' : 'prd'), weight: 1 });
    return fc.oneof(...options);
  }

  function queryString(op: Operation, clean: boolean): fc.Arbitrary<string> {
    const valid = (param: Operation['query'][number]) =>
      arbitraries.value(param.schema, false, param.name).map((v) => (v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v)));
    if (clean) {
      return fc
        .tuple(...op.query.filter((q) => q.name !== 'page').map((q) => fc.option(valid(q).map((v) => `${encode(q.name)}=${encode(v)}`), { freq: 2 })))
        .map((parts) => parts.filter((p) => p !== null).join('&'));
    }
    const declared = op.query.map((param) =>
      fc.option(
        fc.oneof(
          { arbitrary: valid(param), weight: 4 },
          { arbitrary: hostileString, weight: 1 },
          { arbitrary: fc.constantFrom('1e309', '-0', '0', '101', '1.5', '', ' ', '0x10', 'a'.repeat(10_240)), weight: 1 },
        ).map((value) => [param.name, value] as [string, string]),
        { freq: 2 },
      ),
    );
    const extra = fc.array(fc.tuple(fc.oneof(hostileString, fc.constantFrom(...(op.query.length ? op.query.map((q) => q.name) : ['limit']))), hostileString), {
      maxLength: 2,
    });
    return fc.tuple(fc.tuple(...declared), fc.option(extra, { freq: 4 })).map(([pairs, more]) => {
      const all = [...pairs.filter((p): p is [string, string] => p !== null), ...(more ?? [])];
      return all.map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&');
    });
  }

  function body(op: Operation, clean: boolean): fc.Arbitrary<string | Buffer | undefined> {
    const text = (arb: fc.Arbitrary<unknown>) => arb.map((v) => JSON.stringify(v) as string | undefined);
    if (clean) return op.body ? text(arbitraries.value(op.body, false)) : fc.constant(undefined);
    const raw = fc.constantFrom('{', '{"a":}', '', 'null', '[]', '\u0000', '{"name":"x"}x', 'not json');
    const bytes = fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a));
    if (!op.body) {
      return fc.oneof({ arbitrary: fc.constant(undefined), weight: 6 }, { arbitrary: text(anyJson), weight: 1 }, { arbitrary: raw, weight: 1 });
    }
    return fc.oneof(
      { arbitrary: text(arbitraries.value(op.body, false)), weight: 4 },
      { arbitrary: text(arbitraries.value(op.body, true)), weight: 4 },
      { arbitrary: text(anyJson), weight: 1 },
      { arbitrary: raw, weight: 1 },
      { arbitrary: bytes, weight: 1 },
      { arbitrary: fc.constant(undefined), weight: 1 },
    );
  }

  /**
   * One request for `op`. A clean request is what a correct client sends (the route's method, real
   * ids, values from the schemas, the owner's credential) so that the code past validation runs too;
   * the others vary every part towards the hostile.
   */
  function request(op: Operation, clean: boolean): fc.Arbitrary<FuzzRequest> {
    const method = clean
      ? fc.constant(op.method)
      : fc.oneof({ arbitrary: fc.constant(op.method), weight: 12 }, { arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'), weight: 1 });
    const path = fc.tuple(...op.pathParams.map((name) => pathValue(name, clean).map((v) => [name, v] as const))).map((pairs) =>
      pairs.reduce((p, [name, value]) => p.replace(`{${name}}`, value), op.path),
    );
    const owner = credentials.find((c) => c.name === 'owner')!;
    const credential = clean ? fc.constant(owner) : fc.constantFrom(...credentials);
    const contentType = clean ? fc.constant('application/json') : fc.oneof(
      { arbitrary: fc.constant('application/json'), weight: 10 },
      { arbitrary: fc.constantFrom('application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/JSON', 'application/jsonx', ''), weight: 1 },
    );
    const workspaceHeader = clean
      ? fc.constant(op.pathParams.includes('workspaceId') ? null : workspaces[0])
      : fc.option(fc.oneof(fc.constantFrom(...workspaces), hostileString.map(headerSafe)), { freq: 2 });
    // A few keys shared by every POST, so replays and mismatches occur too; and any text.
    const idempotencyKey =
      op.method === 'POST' ? fc.option(fc.oneof(fc.constantFrom('fuzz-1', 'fuzz-2'), hostileString.map(headerSafe)), { freq: 2 }) : fc.constant(null);
    return fc
      .record({ method, path, query: queryString(op, clean), credential, workspaceHeader, idempotencyKey, contentType, payload: body(op, clean) })
      .map((r) => {
        const headers: Record<string, string> = {};
        if (r.credential.token) headers.authorization = `Bearer ${r.credential.token}`;
        if (r.workspaceHeader !== null) headers['service-workspace-id'] = r.workspaceHeader;
        if (r.idempotencyKey !== null) headers['idempotency-key'] = r.idempotencyKey;
        if (r.payload !== undefined && r.contentType) headers['content-type'] = r.contentType;
        const url = r.query ? `${r.path}?${r.query}` : r.path;
        const options: InjectOptions = { method: r.method as InjectOptions['method'], url, headers };
        if (r.payload !== undefined) options.payload = r.payload;
        const shown = typeof r.payload === 'string' ? r.payload.slice(0, 200) : r.payload ? `<${r.payload.length} bytes>` : '';
        return { options, label: `${r.method} ${url.slice(0, 300)} as ${r.credential.name} ${JSON.stringify(headers['content-type'] ?? '')} ${shown}` };
      });
  }

  it('answers every generated request without a 5xx; every 4xx is the envelope and changes nothing', async () => {
    let baseline: Awaited<ReturnType<typeof snapshot>> | null = null;
    const statuses = new Map<number, number>();
    const anyRequest = fc.tuple(fc.constantFrom(...ops), fc.boolean()).chain(([op, clean]) => request(op, clean));

    await fc.assert(
      fc.asyncProperty(anyRequest, async ({ options, label }) => {
        const before = baseline ?? (await snapshot(t.ctx));
        // The event stream does not end: its head and first chunk are what it answers.
        const res = String(options.url).split('?')[0].endsWith('/events/stream') ? await injectStream(t.app, options as Record<string, unknown>) : await t.app.inject(options);
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        expect(res.statusCode, `${label} -> ${res.statusCode} ${res.body.slice(0, 300)}`).toBeLessThan(500);
        expect(res.headers['request-id'], label).toMatch(/^req_/);
        const allowed = declared(String(options.method), String(options.url));
        if (allowed) expect(allowed, `${label} -> ${res.statusCode}, not declared by its operation`).toContain(String(res.statusCode));
        if (res.statusCode < 400) {
          baseline = null;
          return;
        }
        if (options.method !== 'HEAD') expectEnvelope(res.statusCode, res.headers, res.body, label);
        const after = await snapshot(t.ctx);
        expect(after, `${label} -> ${res.statusCode} changed the database`).toEqual(before);
        baseline = after;
      }),
      { numRuns: RUNS, seed: SEED, interruptAfterTimeLimit: undefined },
    );
    if (process.env.FUZZ_VERBOSE) console.log('statuses', Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])));
    // The generators reach past validation too: some requests succeed, most kinds of refusal occur.
    expect([...statuses.keys()].some((s) => s < 300)).toBe(true);
    expect([...statuses.keys()].filter((s) => s >= 400).length).toBeGreaterThanOrEqual(3);
  }, Math.max(180_000, RUNS * 400));
});
