import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_CATALOG } from '../src/engine/log/catalog.js';
import { ERROR_STATUS } from '../src/http/errors.js';
import { TAGS } from '../src/server/openapi/document.js';
import { SDK_TYPES_FILE, sdkTypes } from '../scripts/sdk-types.mjs';
import { PUBLIC_URL, startTestApp, type TestApp } from './helpers/app.js';
import { ok } from './helpers/expect.js';
import { OPS_PATHS } from '../src/server/ops-routes.js';
import { DASHBOARD_PATHS } from '../src/server/dashboard.js';
import { DOCS_PATHS } from '../src/server/openapi/docs.js';
import { registeredRoutes } from './helpers/routes.js';
import type { Doc, Operation } from './helpers/openapi-doc.js';

/** GET /openapi.json is an OpenAPI 3.1 document of every route that tools can use as it is. */
describe('GET /openapi.json', () => {
  let t: TestApp;
  let doc: Doc;
  const operations = () =>
    Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method: method.toUpperCase(), op })));
  const resolve = (schema: Record<string, unknown>): Record<string, any> => {
    const ref = schema.$ref as string | undefined;
    return ref ? resolve(doc.components.schemas[ref.replace('#/components/schemas/', '')]) : schema;
  };
  const errorStatuses = (op: Operation) => Object.keys(op.responses).filter((status) => /^[45]\d\d$/.test(status));

  beforeAll(async () => {
    t = await startTestApp();
    doc = ok(await t.call(null, 'GET', '/openapi.json'));
  });
  afterAll(() => t.close());

  it('is an OpenAPI 3.1.0 document with bearer security, its server from SVC_PUBLIC_URL, a licence and a contact, served without a credential', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.title).toBeTruthy();
    expect(doc.info.version).toBe(JSON.parse(readFileSync('package.json', 'utf8')).version);
    expect(doc.info.license).toEqual({ name: 'MIT', identifier: 'MIT' });
    expect(doc.info.contact).toEqual({ name: 'The operators of this service', url: `${PUBLIC_URL}/docs` });
    expect(doc.servers).toEqual([{ url: PUBLIC_URL, description: expect.any(String) }]);
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.security).toEqual([{ bearer: [] }]);
  });

  it('documents exactly the routes the app registered', () => {
    const registered = registeredRoutes(t.app);
    for (const route of registered) expect(t.app.hasRoute({ method: route.method as 'GET', url: route.path })).toBe(true);
    const served = registered
      // The document, its reference page and the operational routes (server/ops-routes.ts) are not part of the API.
      .filter((r) => !['/openapi.json', ...DOCS_PATHS, ...OPS_PATHS, ...DASHBOARD_PATHS].includes(r.path))
      .map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`)
      .sort();
    expect(served.length).toBeGreaterThanOrEqual(15);
    expect(operations().map((o) => `${o.method} ${o.path}`).sort()).toEqual(served);
  });

  it('gives every operation a unique camelCase operationId, a summary and a tag from the declared list', () => {
    const declared = doc.tags.map((tag) => tag.name);
    expect(declared).toEqual(TAGS.map((tag) => tag.name));
    for (const tag of doc.tags) expect(tag.description, tag.name).toBeTruthy();
    const all = [...operations().map(({ path, method, op }) => ({ at: `${method} ${path}`, op })), ...Object.entries(doc.webhooks).map(([type, ops]) => ({ at: type, op: ops.post }))];
    for (const { at, op } of all) {
      expect(op.operationId, at).toMatch(/^[a-z][a-zA-Z0-9]*$/);
      expect(op.summary, at).toBeTruthy();
      expect(op.tags, at).toHaveLength(1);
      expect(declared, at).toContain(op.tags![0]);
    }
    const ids = all.map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    // The two mounts of one operation: the workspace-path twin takes a suffix.
    expect(doc.paths['/v1/products'].get.operationId).toBe('listProducts');
    expect(doc.paths['/v1/workspaces/{workspaceId}/products'].get.operationId).toBe('listProductsInWorkspace');
    expect(doc.paths['/v1/workspaces/{workspaceId}/api-keys'].get.operationId).toBe('listApiKeys');
  });

  it('declares every path parameter, required', () => {
    for (const { path, method, op } of operations()) {
      const inPath = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      const declared = (op.parameters ?? []).filter((p) => p.in === 'path');
      expect(declared.map((p) => p.name).sort(), `${method} ${path}`).toEqual(inPath);
      for (const p of declared) expect(p.required, `${method} ${path} ${p.name}`).toBe(true);
    }
  });

  it('declares a JSON success response for every operation (the event stream: text/event-stream), and limit and page on every paginated list', () => {
    for (const { path, method, op } of operations()) {
      const success = Object.keys(op.responses).filter((s) => /^2\d\d$/.test(s));
      // One success status per operation; a recovery answers 200 for a dry run (nothing made) and 202 for a run it starts.
      expect(success, `${method} ${path}`).toEqual(path.endsWith('/recover') ? ['200', '202'] : [expect.any(String)]);
      for (const status of success) {
        expect(op.responses[status].description, `${method} ${path}`).not.toBe('Default Response');
        const mediaType = path.endsWith('/events/stream') ? 'text/event-stream' : 'application/json';
        expect(Object.keys(op.responses[status].content ?? {}), `${method} ${path}`).toEqual([mediaType]);
        const schema = op.responses[status].content?.[mediaType]?.schema;
        expect(schema, `${method} ${path}`).toBeDefined();
        const body = resolve(schema!);
        if (body.properties?.nextPageUrl) {
          expect(Object.keys(body.properties).sort(), `${method} ${path}`).toEqual(['data', 'nextPageUrl', 'previousPageUrl']);
          const query = (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
          expect(query, `${method} ${path}`).toEqual(expect.arrayContaining(['limit', 'page']));
        }
      }
      if (method === 'POST' && path.endsWith('/products')) expect(success[0]).toBe('201');
    }
    const events = doc.paths['/v1/events'].get.parameters!.filter((p) => p.in === 'query').map((p) => p.name);
    expect(events).toEqual(expect.arrayContaining(['type', 'subjectType', 'subjectId', 'limit', 'page']));
  });

  it('declares on every operation the errors of its kind of route, each as the Error envelope', () => {
    for (const { path, method, op } of operations()) {
      const at = `${method} ${path}`;
      const statuses = errorStatuses(op);
      const params = (op.parameters ?? []).map((p) => p.name);
      // Any URL can be malformed (400); every /v1 request is authenticated, counted and reads the database.
      const expected = ['400', '401', '429', '500', '503'];
      if (['POST', 'PATCH', 'DELETE'].includes(method)) expected.push('413', '415');
      if (path.includes('{')) expected.push('404');
      if (params.includes('service-workspace-id') || path.includes('{workspaceId}')) expected.push('403');
      if (path === '/v1/notifications') expected.push('403');
      expect(statuses, at).toEqual(expect.arrayContaining(expected));
      if (!path.includes('{')) expect(statuses, at).not.toContain('404');
      if (method === 'GET') expect(statuses, at).not.toContain('415');
      for (const status of statuses) {
        const response = op.responses[status];
        expect(response.content?.['application/json']?.schema, `${at} ${status}`).toEqual({ $ref: '#/components/schemas/ErrorResponse' });
        const codes = Object.entries(ERROR_STATUS).filter(([, s]) => String(s) === status).map(([code]) => code);
        expect(codes.some((code) => response.description?.includes(`${code}: `)), `${at} ${status}: ${response.description}`).toBe(true);
        expect(response.headers, `${at} ${status}`).toHaveProperty('Request-Id');
      }
      expect(op.responses['429'].headers, at).toHaveProperty('Retry-After');
      expect(op.responses['401'].headers, at).toHaveProperty('WWW-Authenticate');
    }
    // Route-specific errors, declared with the route.
    for (const path of ['/v1/webhooks/endpoints/{endpointId}/send-test-event', '/v1/webhooks/deliveries/{deliveryId}/replay']) {
      expect(doc.paths[path].post.responses['409'].description).toContain('ENDPOINT_INACTIVE');
    }
    // Every POST takes an Idempotency-Key, with its errors, and says when a success is a replay.
    const posts = operations().filter(({ path, method }) => method === 'POST' && path.startsWith('/v1/'));
    expect(posts.length).toBeGreaterThan(5);
    for (const { path, op } of posts) {
      const key = op.parameters?.find((p) => p.in === 'header' && p.name === 'idempotency-key');
      expect(key, path).toBeDefined();
      expect(key!.required, path).not.toBe(true);
      expect(key!.schema, path).toMatchObject({ type: 'string', minLength: 1, maxLength: 255 });
      expect(op.responses['409'].description, path).toContain('IDEMPOTENCY_IN_PROGRESS');
      expect(op.responses['422'].description, path).toContain('IDEMPOTENCY_MISMATCH');
      const success = Object.keys(op.responses).filter((s) => s.startsWith('2'));
      for (const status of success) expect(op.responses[status].headers, `${path} ${status}`).toHaveProperty('Idempotent-Replayed');
    }
    for (const { path, method, op } of operations().filter((o) => o.method !== 'POST')) {
      expect((op.parameters ?? []).map((p) => p.name), `${method} ${path}`).not.toContain('idempotency-key');
      expect(op.responses['200']?.headers ?? {}, `${method} ${path}`).not.toHaveProperty('Idempotent-Replayed');
    }
    expect(errorStatuses(doc.paths['/v1/me'].get)).toEqual(['400', '401', '429', '500', '503']);
    const error = doc.components.schemas.ErrorResponse;
    expect(error.properties.error.required).toEqual(expect.arrayContaining(['code', 'message', 'requestId']));
    const codes = error.properties.error.properties.code.anyOf.map((c: { const?: string; enum?: string[] }) => c.const ?? c.enum?.[0]);
    expect(codes.sort()).toEqual(Object.keys(ERROR_STATUS).sort());
  });

  it('declares the request body of writes', () => {
    for (const [method, path] of [
      ['post', '/v1/products'],
      ['patch', '/v1/products/{productId}'],
      ['post', '/v1/workspaces/{workspaceId}/api-keys'],
      ['post', '/v1/webhooks/endpoints'],
    ]) {
      expect(doc.paths[path][method].requestBody?.content['application/json'].schema, `${method} ${path}`).toBeDefined();
    }
  });

  it('types events by the catalog: an EventType enum, one payload schema per type and the Event union of them', () => {
    const types = EVENT_CATALOG.map((e) => e.type);
    expect(doc.components.schemas.EventType.enum).toEqual(types);
    const union = doc.components.schemas.Event;
    expect(union.discriminator.propertyName).toBe('type');
    const variants = union.anyOf.map((ref: { $ref: string }) => resolve(ref));
    expect(variants.map((v: any) => v.properties.type.enum)).toEqual(types.map((type) => [type]));
    for (const [i, { subject }] of EVENT_CATALOG.entries()) {
      if (subject) expect(variants[i].properties.subject.properties.type.enum).toEqual([subject]);
      else expect(variants[i].properties.subject).toBeUndefined();
      expect(variants[i].required).toEqual(expect.arrayContaining(['id', 'type', 'created', ...(subject ? ['subject'] : [])]));
    }
    expect(resolve(doc.paths['/v1/events/{eventId}'].get.responses['200'].content!['application/json'].schema)).toBe(union);
    const catalog = resolve(doc.paths['/v1/webhooks/endpoints/event-types'].get.responses['200'].content!['application/json'].schema);
    expect(catalog.properties.data.items.properties.type).toEqual({ $ref: '#/components/schemas/EventType' });
  });

  it('has a webhooks entry per catalog type: its payload and the three Standard Webhooks headers', () => {
    expect(Object.keys(doc.webhooks)).toEqual(EVENT_CATALOG.map((e) => e.type));
    for (const [type, { post }] of Object.entries(doc.webhooks)) {
      const schema = post.requestBody!.content['application/json'].schema as { $ref: string };
      expect(resolve(schema).properties.type.enum, type).toEqual([type]);
      const headers = post.parameters!.map((p) => doc.components.parameters[p.$ref!.split('/').pop()!]);
      expect(headers.map((h) => [h.name, h.in, h.required])).toEqual([
        ['webhook-id', 'header', true],
        ['webhook-timestamp', 'header', true],
        ['webhook-signature', 'header', true],
      ]);
      expect(Object.keys(post.responses)).toEqual(['2XX', 'default']);
    }
  });

  it('documents expand as an array of the names it offers, written comma-separated', () => {
    const expand = doc.paths['/v1/organizations'].get.parameters!.find((p) => p.name === 'expand')!;
    expect(expand).toMatchObject({ in: 'query', style: 'form', explode: false, schema: { type: 'array', items: { type: 'string', enum: ['workspaces'] } } });
    expect(JSON.stringify(doc)).not.toContain('x-expand');
  });

  it('has no reference that does not resolve', () => {
    const refs: string[] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === 'object') {
        for (const [k, v] of Object.entries(node)) k === '$ref' ? refs.push(v as string) : walk(v);
      }
    };
    walk(doc);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) {
      const [, kind, name] = /^#\/components\/(\w+)\/([\w.-]+)$/.exec(ref) ?? [];
      expect(doc.components[kind]?.[name], ref).toBeDefined();
    }
  });

  it('passes `redocly lint` with the recommended rules, offline: no error, no warning', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-openapi-'));
    try {
      const file = join(dir, 'openapi.json');
      writeFileSync(file, JSON.stringify(doc));
      // redocly.yaml: recommended rules, telemetry off.
      const lint = spawnSync(process.execPath, ['node_modules/@redocly/cli/bin/cli.js', 'lint', file, '--config', 'redocly.yaml', '--format', 'json'], {
        encoding: 'utf8',
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      });
      const report = JSON.parse(lint.stdout) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; message: string }[] };
      expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
      expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
      expect(lint.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is the document the committed SDK types were generated from (else: npm run sdk:generate)', async () => {
    const committed = readFileSync(SDK_TYPES_FILE, 'utf8');
    expect((await sdkTypes(doc)) === committed, 'sdk/src/schema.ts is stale: run npm run sdk:generate').toBe(true);
  });
});
