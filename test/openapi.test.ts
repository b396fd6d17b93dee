import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.js';
import { ok } from './helpers/expect.js';
import { OPS_PATHS } from '../src/ops/routes.js';
import { registeredRoutes } from './helpers/routes.js';

type Operation = {
  parameters?: { in: string; name: string; required?: boolean; schema?: unknown }[];
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, { description?: string; content?: Record<string, { schema: Record<string, unknown> }> }>;
  summary?: string;
};

/** Spec 9 and issue 2 item 9: GET /openapi.json is an OpenAPI 3.1 document of every route. */
describe('GET /openapi.json', () => {
  let t: TestApp;
  let doc: { openapi: string; info: { title: string; version: string }; paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, any>; securitySchemes: Record<string, any> }; security: unknown[] };
  const operations = () =>
    Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method: method.toUpperCase(), op })));
  const resolve = (schema: Record<string, unknown>): Record<string, any> => {
    const ref = schema.$ref as string | undefined;
    return ref ? resolve(doc.components.schemas[ref.replace('#/components/schemas/', '')]) : schema;
  };

  beforeAll(async () => {
    t = await startTestApp();
    doc = ok(await t.call(null, 'GET', '/openapi.json'));
  });
  afterAll(() => t.close());

  it('is an OpenAPI 3.1.0 document with bearer security, served without a credential', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.title).toBeTruthy();
    expect(doc.info.version).toBeTruthy();
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.security).toEqual([{ bearer: [] }]);
  });

  it('documents exactly the routes the app registered', () => {
    const registered = registeredRoutes(t.app);
    for (const route of registered) expect(t.app.hasRoute({ method: route.method as 'GET', url: route.path })).toBe(true);
    const served = registered
      // The document itself and the operational routes (ops/routes.ts) are not part of the API.
      .filter((r) => r.path !== '/openapi.json' && !OPS_PATHS.includes(r.path))
      .map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`)
      .sort();
    expect(served.length).toBeGreaterThanOrEqual(15);
    expect(operations().map((o) => `${o.method} ${o.path}`).sort()).toEqual(served);
  });

  it('declares every path parameter, required', () => {
    for (const { path, method, op } of operations()) {
      const inPath = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      const declared = (op.parameters ?? []).filter((p) => p.in === 'path');
      expect(declared.map((p) => p.name).sort(), `${method} ${path}`).toEqual(inPath);
      for (const p of declared) expect(p.required, `${method} ${path} ${p.name}`).toBe(true);
    }
  });

  it('declares a JSON success response for every operation, and limit and page on every paginated list', () => {
    for (const { path, method, op } of operations()) {
      const success = Object.keys(op.responses).filter((s) => /^2\d\d$/.test(s));
      expect(success, `${method} ${path}`).toHaveLength(1);
      const schema = op.responses[success[0]].content?.['application/json']?.schema;
      expect(schema, `${method} ${path}`).toBeDefined();
      const body = resolve(schema!);
      if (body.properties?.nextPageUrl) {
        expect(Object.keys(body.properties).sort(), `${method} ${path}`).toEqual(['data', 'nextPageUrl', 'previousPageUrl']);
        const query = (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
        expect(query, `${method} ${path}`).toEqual(expect.arrayContaining(['limit', 'page']));
      }
      if (method === 'POST' && path.endsWith('/products')) expect(success[0]).toBe('201');
    }
    const events = doc.paths['/v1/events'].get.parameters!.filter((p) => p.in === 'query').map((p) => p.name);
    expect(events).toEqual(expect.arrayContaining(['type', 'subjectType', 'subjectId', 'limit', 'page']));
    const orgs = doc.paths['/v1/organizations'].get.parameters!.filter((p) => p.in === 'query').map((p) => p.name);
    expect(orgs).toEqual(expect.arrayContaining(['expand', 'limit', 'page']));
  });

  it('declares the request body of writes, and 413 and 415 for them', () => {
    for (const [method, path] of [
      ['post', '/v1/products'],
      ['patch', '/v1/products/{productId}'],
      ['post', '/v1/workspaces/{workspaceId}/api-keys'],
    ]) {
      const op = doc.paths[path][method];
      expect(op.requestBody?.content['application/json'].schema, `${method} ${path}`).toBeDefined();
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['413', '415']));
    }
  });

  it('declares the error responses with the Error schema on every operation', () => {
    for (const { path, method, op } of operations()) {
      const errors = Object.entries(op.responses).filter(([status]) => /^[45]\d\d$/.test(status));
      const statuses = errors.map(([status]) => status);
      expect(statuses, `${method} ${path}`).toEqual(expect.arrayContaining(['400', '401', '403', '404', '500']));
      for (const [status, response] of errors) {
        expect(response.content?.['application/json']?.schema, `${method} ${path} ${status}`).toEqual({ $ref: '#/components/schemas/Error' });
        expect(response.description, `${method} ${path} ${status}`).toBeTruthy();
      }
    }
    const error = doc.components.schemas.Error;
    expect(error.properties.error.required).toEqual(expect.arrayContaining(['code', 'message', 'requestId']));
    const codes = error.properties.error.properties.code.anyOf.map((c: { const?: string; enum?: string[] }) => c.const ?? c.enum?.[0]);
    expect(codes).toEqual(expect.arrayContaining(['VALIDATION', 'UNAUTHENTICATED', 'FORBIDDEN', 'NOT_FOUND', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'INTERNAL', 'UNAVAILABLE']));
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
      expect(ref).toMatch(/^#\/components\/schemas\//);
      expect(doc.components.schemas[ref.slice('#/components/schemas/'.length)], ref).toBeDefined();
    }
  });
});
