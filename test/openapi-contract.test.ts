import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CURRENCIES } from '../src/lib/money.js';
import { URL_PATTERN } from '../src/webhooks/endpoints/schemas.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { ok } from './helpers/expect.js';

type Schema = Record<string, any>;
type Operation = { operationId: string; description?: string; parameters?: Schema[]; requestBody?: Schema; responses: Record<string, Schema> };

/**
 * The OpenAPI document is as strict as the service where third-party tools (a validating
 * proxy, generated contract tests, linters, a client generator) found it looser or silent, and
 * reads like real traffic. Each check below is one of their findings.
 */
describe('the OpenAPI document against the service', () => {
  let t: TestApp;
  let doc: Schema;
  let key: string;
  const operations = () =>
    Object.entries(doc.paths as Record<string, Record<string, Operation>>).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method, op })));
  const component = (ref: string) => doc.components.schemas[ref.split('/').pop()!];

  beforeAll(async () => {
    t = await startTestApp();
    doc = ok(await t.call(null, 'GET', '/openapi.json'));
    key = t.demo.workspaces[0].apiKey;
  });
  afterAll(() => t?.close());

  it('gives every string and number an example (or an enum, a constant or a standard format), so no sample says "string"', () => {
    const missing: string[] = [];
    const seen = new Set<string>();
    const walk = (schema: Schema | undefined, at: string): void => {
      if (!schema || schema.examples || schema.example !== undefined) return;
      if (schema.$ref) {
        if (!seen.has(schema.$ref)) seen.add(schema.$ref), walk(component(schema.$ref), schema.$ref);
        return;
      }
      for (const branch of [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])]) walk(branch, at);
      for (const [name, property] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) walk(property, `${at}.${name}`);
      if (schema.items) walk(schema.items, `${at}[]`);
      if (typeof schema.additionalProperties === 'object') walk(schema.additionalProperties, `${at}{}`);
      const leaf = ['string', 'integer', 'number'].includes(schema.type);
      if (leaf && !schema.enum && schema.const === undefined && !['date-time', 'email', 'uri'].includes(schema.format)) missing.push(at);
    };
    for (const { op } of operations()) {
      for (const parameter of op.parameters ?? []) if (parameter.example === undefined) walk(parameter.schema, `${op.operationId} ${parameter.name}`);
      for (const media of Object.values((op.requestBody?.content ?? {}) as Record<string, Schema>)) walk(media.schema, `${op.operationId} body`);
      for (const [status, response] of Object.entries(op.responses)) {
        for (const media of Object.values((response.content ?? {}) as Record<string, Schema>)) walk(media.schema, `${op.operationId} ${status}`);
      }
    }
    for (const name of Object.keys(doc.components.schemas)) walk({ $ref: `#/components/schemas/${name}` }, name);
    expect(missing).toEqual([]);
    expect(seen.size).toBeGreaterThan(15);
  });

  it('describes every operation, saying who may call it', () => {
    for (const { path, method, op } of operations()) expect(op.description, `${method} ${path}`).toMatch(/\S/);
    expect(doc.paths['/v1/products'].post.description).toBe(
      'Emits `product.created`.\n\nNeeds `workspace:products:write` in the workspace: an API key of the workspace, or a personal access token of a workspace Owner or Admin.',
    );
    expect(doc.paths['/v1/products'].get.description).toContain('a personal access token of a workspace Owner, Admin or Viewer');
    expect(doc.paths['/v1/workspaces/{workspaceId}/api-keys'].post.description).toContain('(API keys cannot)');
    expect(doc.paths['/v1/me'].get.description).toBe('Any credential: an API key or a personal access token.');
  });

  it('declares RateLimit and RateLimit-Policy on every /v1 answer that can carry them, errors included, and they come', async () => {
    for (const { path, method, op } of operations()) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (op.operationId === 'createDashboardSession' && status.startsWith('2')) continue;
        expect(Object.keys(response.headers ?? {}), `${method} ${path} ${status}`).toEqual(expect.arrayContaining(['RateLimit', 'RateLimit-Policy']));
      }
    }
    for (const [method, url, status] of [['GET', '/v1/products/prd_01jq2m8v3y7r5t9k1x4c6b0n2d', 404], ['POST', '/v1/products', 400], ['GET', '/v1/products?limit=0', 400]] as const) {
      const res = await t.call(key, method, url, method === 'POST' ? {} : undefined);
      expect(res.statusCode).toBe(status);
      expect(res.headers.ratelimit, url).toMatch(/^"default";r=\d+;t=\d+$/);
      expect(res.headers['ratelimit-policy'], url).toMatch(/^"default";q=\d+;w=60$/);
    }
    const refused = await t.call(`svc_sk_${'A'.repeat(36)}`, 'GET', '/v1/products');
    expect(refused.statusCode).toBe(401);
    expect(refused.headers['ratelimit-policy']).toMatch(/^"unauthenticated";q=\d+;w=60$/);
  });

  it('lists the currencies the service accepts, and types amounts as 64-bit integers', async () => {
    const price = doc.paths['/v1/products'].post.requestBody.content['application/json'].schema.properties.price.anyOf[0];
    const pattern = new RegExp(price.properties.currency.pattern, 'u');
    expect(CURRENCIES).toContain('EUR');
    for (const code of CURRENCIES) expect(pattern.test(code), code).toBe(true);
    for (const code of ['XYZ', 'eur', 'EURO', '']) {
      expect(pattern.test(code), code).toBe(false);
      const res = await t.call(key, 'POST', '/v1/products', { name: 'x', price: { amount: 1, currency: code } });
      expect(res.json().error.message).toBe('Invalid body: body.price.currency: must be an ISO 4217 currency code such as USD, EUR or JPY (upper case).');
    }
    expect(price.properties.amount).toMatchObject({ type: 'integer', format: 'int64' });
    for (const name of ['amountTotal']) expect(component('Order').properties[name]).toMatchObject({ type: 'integer', format: 'int64' });
    for (const name of ['unitAmount', 'amount']) expect(component('OrderLineItem').properties[name]).toMatchObject({ type: 'integer', format: 'int64' });
  });

  it("states an endpoint's url and extra headers as the service checks them", async () => {
    const body = doc.paths['/v1/webhooks/endpoints'].post.requestBody.content['application/json'].schema;
    expect(body.properties.url.pattern).toBe(URL_PATTERN);
    const headers = body.properties.headers.anyOf[0];
    expect(headers.propertyNames).toMatchObject({ maxLength: 100, pattern: expect.any(String) });
    expect(headers.additionalProperties).toMatchObject({ maxLength: 1000, pattern: expect.any(String) });
    const url = new RegExp(URL_PATTERN, 'u');
    const create = (fields: Record<string, unknown>) => t.call(key, 'POST', '/v1/webhooks/endpoints', { url: 'https://hooks.example.com/a', subscribedEvents: ['order.*'], ...fields });
    for (const bad of ['hooks.example.com/a', 'https:///x', 'https://a/b c', 'https:\\\\x', 'https://a@b@hooks.example.com/a']) {
      expect(url.test(bad), bad).toBe(false);
      expect((await create({ url: bad })).statusCode, bad).toBe(400);
    }
    // The scheme depends on the settings (https://, http:// with SVC_ALLOW_PRIVATE_TARGETS): the description says so.
    expect(url.test('ftp://hooks.example.com/a')).toBe(true);
    expect((await create({ url: 'ftp://hooks.example.com/a' })).json().error.message).toContain('must start with https://');
    expect(body.properties.url.description).toContain('SVC_ALLOW_PRIVATE_TARGETS');
    // Credentials fit the pattern, for a broker's URL; the description says an https:// URL takes none.
    expect(url.test('amqps://svc:pw@mq.example.com/shop')).toBe(true);
    expect(url.test('https://user:pass@hooks.example.com/a')).toBe(true);
    expect((await create({ url: 'https://user:pass@hooks.example.com/a' })).json().error.message).toContain('must not contain a user name or password');
    expect(body.properties.url.description).toContain('credentials are encrypted at rest and shown redacted');
    const name = new RegExp(headers.propertyNames.pattern, 'u');
    const value = new RegExp(headers.additionalProperties.pattern, 'u');
    expect([name.test('x-team'), name.test('bad name'), value.test('payments'), value.test(' padded')]).toEqual([true, false, true, false]);
    expect((await create({ headers: { 'bad name': 'x' } })).json().error.message).toBe(
      `Invalid body: body.headers: key "bad name" is not a valid header name (1-100 letters, digits and !#$%&'*+.^_\`|~-).`,
    );
    expect((await create({ headers: { 'x-team': 'payments' } })).statusCode).toBe(201);
  });

  it('shows the shape of the ids in paths, lets expand repeat a name, and names its error schema ErrorResponse', async () => {
    const params = doc.paths['/v1/workspaces/{workspaceId}/orders/{orderId}'].get.parameters as Schema[];
    expect(params.find((p) => p.name === 'orderId')!.schema.pattern).toBe('^ord_[0-9a-hjkmnp-tv-z]{26}$');
    expect(params.find((p) => p.name === 'workspaceId')!.schema.pattern).toBe('^wsp_[0-9a-hjkmnp-tv-z]{26}$');
    for (const { path, op } of operations()) {
      for (const p of (op.parameters ?? []).filter((p) => p.in === 'path')) expect(p.schema.pattern, `${path} ${p.name}`).toMatch(/^\^[a-z]{3}_/);
    }
    // An id of another shape is still a 404, not a 400: the pattern tells clients what ids look like.
    expect((await t.call(key, 'GET', '/v1/orders/nope')).statusCode).toBe(404);
    const expand = (doc.paths['/v1/orders'].get.parameters as Schema[]).find((p) => p.name === 'expand')!;
    expect(expand.schema.uniqueItems).toBeUndefined();
    expect((await t.call(key, 'GET', '/v1/orders?expand=lineItems,lineItems')).statusCode).toBe(200);
    expect(doc.components.schemas.Error).toBeUndefined();
    expect(doc.components.schemas.ErrorResponse.properties.error.required).toEqual(['code', 'message', 'requestId']);
  });

  it('links the guides and pages its descriptions mention, and the service serves them', async () => {
    // Relative to the document's address: the service that serves it serves them.
    expect(doc.info.description).toContain('[docs/receiving-webhooks.md](/docs/guides/receiving-webhooks.md)');
    const dashboard = doc.tags.find((tag: Schema) => tag.name === 'Dashboard');
    expect(dashboard.description).toContain('[/dashboard/](/dashboard/)');
    const text = JSON.stringify(doc);
    const links = [...text.matchAll(/\]\(\/docs\/guides\/([a-z-]+\.md)\)/g)].map((m) => m[1]);
    expect(new Set(links)).toEqual(new Set(['receiving-webhooks.md', 'dashboard.md', 'events-stream.md', 'idempotency.md']));
    expect(text).not.toMatch(/(?<![[/])docs\/[a-z-]+\.md(?!\])/);
    for (const name of new Set(links)) {
      const guide = await t.call(null, 'GET', `/docs/guides/${name}`);
      expect(guide.statusCode, name).toBe(200);
      expect(guide.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(guide.body).toMatch(/^# /);
    }
    for (const name of ['nope.md', '..%2Fpackage.json', '..%2F..%2Fpackage.json', 'README.md']) {
      expect((await t.call(null, 'GET', `/docs/guides/${name}`)).statusCode, name).toBe(404);
    }
  });
});
