import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, userOf, type TestApp } from './helpers/app.js';
import { expectError } from './helpers/expect.js';
import { injectStream } from './helpers/sse.js';

/**
 * Every workspace route, once, by its path below the workspace: it answers at
 * `/v1/workspaces/{workspaceId}<path>` and (unless only in the path) at `/v1<path>`. A body, where the
 * route takes one, is valid, so that a refusal is about the workspace and not about the input.
 * A route added to the API without a line here fails the coverage test below.
 */
type Body = Record<string, unknown>;
const ROUTES: Record<string, { body?: Body | ((ids: Record<string, string>) => Body); namesFirstWorkspace?: true }> = {
  'GET /products': {},
  'POST /products': { body: { name: 'Intruder' } },
  'GET /products/{productId}': {},
  'PATCH /products/{productId}': { body: { name: 'Hijacked', metadata: {} } },
  'DELETE /products/{productId}': {},
  'GET /orders': {},
  // Its body names the first workspace's product: another workspace cannot order it (400, see below).
  'POST /orders': { body: (ids) => ({ lineItems: [{ productId: ids.productId, quantity: 1 }] }), namesFirstWorkspace: true },
  'GET /orders/{orderId}': {},
  'PATCH /orders/{orderId}': { body: { metadata: { hijacked: 'yes' }, customerEmail: null } },
  'POST /orders/{orderId}/pay': {},
  'POST /orders/{orderId}/fulfill': {},
  'POST /orders/{orderId}/cancel': {},
  'POST /orders/{orderId}/refund': {},
  'GET /events': {},
  'GET /events/{eventId}': {},
  'GET /events/stream': {},
  'GET /api-keys': {},
  'POST /api-keys': { body: { name: 'Intruder' } },
  'DELETE /api-keys/{keyId}': {},
  'GET /webhooks/endpoints': {},
  'POST /webhooks/endpoints': { body: { url: 'https://intruder.example.com/hook', subscribedEvents: ['product.*'] } },
  'GET /webhooks/endpoints/event-types': {},
  'GET /webhooks/endpoints/{endpointId}': {},
  'GET /webhooks/endpoints/{endpointId}/stats': {},
  'PATCH /webhooks/endpoints/{endpointId}': { body: { url: 'https://intruder.example.com/hook', active: false } },
  'DELETE /webhooks/endpoints/{endpointId}': {},
  'POST /webhooks/endpoints/{endpointId}/rotate-secret': {},
  'POST /webhooks/endpoints/{endpointId}/send-test-event': {},
  'GET /webhooks/deliveries': {},
  'GET /webhooks/deliveries/{deliveryId}': {},
  'GET /webhooks/deliveries/{deliveryId}/attempts': {},
  'POST /webhooks/deliveries/{deliveryId}/replay': {},
  'POST /webhooks/endpoints/{endpointId}/recover': { body: { since: '2020-01-01T00:00:00Z', until: '2020-01-02T00:00:00Z' } },
  'GET /webhooks/endpoints/{endpointId}/recoveries': {},
  'GET /webhooks/recoveries/{recoveryId}': {},
};

const IN_PATH = '/v1/workspaces/{workspaceId}';

/** Workspaces apart (docs/api.md#the-workspace-of-a-request): no credential of another workspace reads or changes the first one. */
describe('workspace isolation', () => {
  let t: TestApp;
  let ws1: string;
  let ws2: string;
  /** Workspace routes of the OpenAPI document: `METHOD /path-below-workspace` → mounts it answers at. */
  const documented = new Map<string, { inPath: boolean; atV1: boolean }>();
  /** An id of the first workspace for each path parameter. */
  const ids: Record<string, string> = {};
  let secrets: string[] = [];
  let before: Record<string, string[]>;

  /** Every row of the first workspace, in every table that has a workspace_id, as JSON text (batches of events positioned first). */
  async function snapshot(): Promise<Record<string, string[]>> {
    await t.ctx.sequencer.settled();
    const tables = await t.ctx.db.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.columns WHERE column_name = 'workspace_id' AND table_schema = current_schema() ORDER BY 1",
    );
    const rows: Record<string, string[]> = {};
    for (const { table_name: table } of [...tables, { table_name: 'workspaces' }]) {
      const column = table === 'workspaces' ? 'id' : 'workspace_id';
      const found = await t.ctx.db.query<{ row: string }>(`SELECT to_jsonb(t)::text AS row FROM ${table} t WHERE t.${column} = $1 ORDER BY 1`, [ws1]);
      rows[table] = found.map((r) => r.row);
    }
    return rows;
  }

  beforeAll(async () => {
    t = await startTestApp();
    [ws1, ws2] = t.demo.workspaces.map((w) => w.id);
    const owner = userOf(t.demo, 'owner').token;
    const doc = (await t.call(null, 'GET', '/openapi.json')).json() as { paths: Record<string, Record<string, { parameters?: { in: string; name: string }[] }>> };
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(operations)) {
        const inPath = path.startsWith(`${IN_PATH}/`);
        const atV1 = !inPath && (op.parameters ?? []).some((p) => p.in === 'header' && p.name === 'service-workspace-id');
        if (!inPath && !atV1) continue;
        const key = `${method.toUpperCase()} ${path.slice(inPath ? IN_PATH.length : 3)}`;
        const entry = documented.get(key) ?? { inPath: false, atV1: false };
        documented.set(key, { inPath: entry.inPath || inPath, atV1: entry.atV1 || atV1 });
      }
    }

    // The first workspace's resources, one of each kind, made through its own credentials.
    const call = (method: InjectOptions['method'], path: string, body?: unknown) => t.call(owner, method, `/v1/workspaces/${ws1}${path}`, body);
    if (documented.has('POST /webhooks/endpoints')) {
      const endpoint = await call('POST', '/webhooks/endpoints', { url: 'https://hooks.example.com/in', subscribedEvents: ['product.*'] });
      ids.endpointId = endpoint.json().id;
    }
    ids.productId = (await call('POST', '/products', { name: 'Secret product', price: { amount: 100, currency: 'EUR' } })).json().id;
    ids.orderId = (await call('POST', '/orders', { lineItems: [{ productId: ids.productId, quantity: 1 }] })).json().id;
    ids.eventId = (await call('GET', '/events')).json().data[0].id;
    ids.keyId = (await call('GET', '/api-keys')).json().data[0].id;
    if (ids.endpointId) ids.deliveryId = (await call('GET', '/webhooks/deliveries')).json().data[0].id;
    if (documented.has('POST /webhooks/endpoints/{endpointId}/recover')) {
      ids.recoveryId = (await call('POST', `/webhooks/endpoints/${ids.endpointId}/recover`, { since: new Date(Date.now() - 3_600_000).toISOString() })).json().id;
    }

    before = await snapshot();
    // Every id of the first workspace, which no answer to another workspace's credential may contain.
    secrets = Object.values(before).flat().map((row) => JSON.parse(row).id).filter((id): id is string => typeof id === 'string');
  });
  afterAll(() => t.close());

  it('has a line in the route table for every workspace route of the OpenAPI document', () => {
    expect(documented.size).toBeGreaterThanOrEqual(10);
    const missing = [...documented.keys()].filter((key) => !(key in ROUTES));
    expect(missing, 'workspace routes without isolation coverage: add them to ROUTES').toEqual([]);
    for (const table of ['products', 'orders', 'order_line_items', 'events', 'api_keys']) expect(before[table].length, table).toBeGreaterThan(0);
  });

  for (const [key, { body: given, namesFirstWorkspace }] of Object.entries(ROUTES)) {
    it(key, async () => {
      const mounts = documented.get(key);
      expect(mounts, `${key} is in the route table but not in the OpenAPI document`).toBeDefined();
      if (!mounts) return;
      const [method, template] = key.split(' ') as [InjectOptions['method'], string];
      const params = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      for (const name of params) expect(ids[name], `no fixture of the first workspace for {${name}}`).toBeDefined();
      const path = template.replace(/\{(\w+)\}/g, (_, name: string) => ids[name]);
      const body = typeof given === 'function' ? given(ids) : given;
      /** Ids of the first workspace the request itself names, which an answer may repeat back. */
      const named = new Set(JSON.stringify(body ?? null).match(/\b[a-z]{3}_[0-9a-z]{26}\b/g) ?? []);
      const ws2Key = t.demo.workspaces[1].apiKey;
      const outsider = userOf(t.demo, 'outsider').token;
      const owner = userOf(t.demo, 'owner').token;
      // The event stream does not end: its head and first chunk are what it answers.
      const attempt = (token: string, url: string, headers?: Record<string, string>) =>
        key === 'GET /events/stream'
          ? (injectStream(t.app, { method, url, headers: { authorization: `Bearer ${token}`, ...headers } }) as unknown as ReturnType<typeof t.call>)
          : t.call(token, method, url, body, headers);

      // The first workspace named in the path or the header, by credentials that do not reach it: 403.
      const refusedAt = [
        await attempt(ws2Key, `/v1/workspaces/${ws1}${path}`),
        await attempt(outsider, `/v1/workspaces/${ws1}${path}`),
        ...(mounts.atV1 ? [await attempt(ws2Key, `/v1${path}`, { 'service-workspace-id': ws1 }), await attempt(outsider, `/v1${path}`, { 'service-workspace-id': ws1 })] : []),
      ];
      for (const res of refusedAt) expectError(res, 403, 'FORBIDDEN');

      // Credentials acting in their own workspace, given the first workspace's ids: 404 (never 403 for
      // an id), or, without an id, an answer about their own workspace only.
      const own = [
        { res: await attempt(owner, `/v1/workspaces/${ws2}${path}`), full: true },
        { res: await attempt(outsider, `/v1/workspaces/${t.demo.outsiderOrganization.workspaceId}${path}`), full: true },
        { res: await attempt(ws2Key, mounts.atV1 ? `/v1${path}` : `/v1/workspaces/${ws2}${path}`), full: key.includes('/api-keys') === false },
      ];
      for (const { res, full } of own) {
        if (!full) {
          expectError(res, 403, 'FORBIDDEN');
        } else if (params.length > 0) {
          expectError(res, 404, 'NOT_FOUND');
        } else if (namesFirstWorkspace) {
          // The first workspace's resource, named in the body, is as unknown as any other id.
          expectError(res, 400, 'VALIDATION');
          for (const secret of [ws1, ...secrets].filter((s) => !named.has(s))) expect(res.body).not.toContain(secret);
        } else {
          expect(res.statusCode, res.body).toBeLessThan(300);
          for (const secret of [ws1, ...secrets]) expect(res.body).not.toContain(secret);
        }
      }
    });
  }

  it('left every row of the first workspace as it was', async () => {
    expect(await snapshot()).toEqual(before);
  });
});
