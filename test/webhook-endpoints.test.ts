import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_CATALOG } from '../src/engine/log/catalog.js';
import { findEndpoint, signingSecrets } from '../src/webhooks/endpoints/store.js';
import { ManualClock, pathOf, startTestApp, userOf, type TestApp } from './helpers/app.js';
import { endpointCreator, unlimited, URL_A } from './helpers/webhook-endpoints.js';

const SECRET = /^whsec_[A-Za-z0-9]{44}$/;

describe('webhook endpoints', () => {
  let t: TestApp;
  let key: string;
  const clock = new ManualClock();
  beforeAll(async () => {
    t = await startTestApp({ clock, config: unlimited });
    key = t.demo.workspaces[0].apiKey;
  });
  afterAll(() => t.close());

  const create = endpointCreator(() => t, () => key);

  it('creates an endpoint and shows its secret only in the creation response', async () => {
    const res = await t.call(key, 'POST', '/v1/webhooks/endpoints', {
      url: URL_A,
      subscribedEvents: ['product.created', 'product.*', 'product.created'],
      description: 'Orders service',
    });
    expect(res.statusCode).toBe(201);
    const endpoint = res.json();
    expect(endpoint).toEqual({
      id: expect.stringMatching(/^whe_[0-9a-z]{26}$/),
      url: URL_A,
      description: 'Orders service',
      subscribedEvents: ['product.created', 'product.*'],
      active: true,
      disabledReason: null,
      rateLimit: null,
      headers: {},
      ordering: 'none',
      propagateTrace: false,
      throttle: null,
      alerts: true,
      failing: null,
      signatureScheme: 'v1',
      publicKey: null,
      exchange: null,
      routingKey: null,
      subject: null,
      createdAt: clock.now().toISOString(),
      updatedAt: clock.now().toISOString(),
      secret: expect.stringMatching(SECRET),
    });

    const fetched = await t.call(key, 'GET', `/v1/webhooks/endpoints/${endpoint.id}`);
    const { secret, ...withoutSecret } = endpoint;
    expect(fetched.json()).toEqual(withoutSecret);
    const listed = await t.call(key, 'GET', '/v1/webhooks/endpoints');
    expect(listed.body).not.toContain(secret);
    expect(listed.json().data).toContainEqual(withoutSecret);
    const [stored] = await t.ctx.db.query<{ secret_enc: string }>('SELECT secret_enc FROM webhook_endpoints WHERE id = $1', [endpoint.id]);
    expect(stored.secret_enc).not.toContain(secret.slice(6));
    expect(t.ctx.secrets.decrypt(stored.secret_enc)).toBe(secret);
  });

  it('refuses bad input with VALIDATION and creates nothing', async () => {
    const before = (await t.call(key, 'GET', '/v1/webhooks/endpoints?limit=100')).json().data.length;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ url: 'http://hooks.example.com/a' }, 'https://'],
      [{ url: 'ftp://hooks.example.com/a' }, 'https://'],
      [{ url: 'hooks.example.com/a' }, 'absolute URL'],
      [{ url: 'https://user:pass@hooks.example.com/a' }, 'password'],
      [{ url: 'https:///hooks.example.com' }, 'https://host/path'],
      [{ url: 'https:\\\\hooks.example.com' }, 'https://host/path'],
      [{ url: ' https://hooks.example.com/a' }, 'spaces'],
      [{ url: 'https://hooks.example.com/a b' }, 'spaces'],
      [{ url: `https://hooks.example.com/${'a'.repeat(2048)}` }, 'url'],
      [{ url: 42 }, 'url'],
      [{ subscribedEvents: [] }, 'subscribedEvents'],
      [{ subscribedEvents: 'product.created' }, 'subscribedEvents'],
      [{ subscribedEvents: ['invoice.created'] }, 'product.created, product.updated'],
      [{ subscribedEvents: ['invoice.*'] }, 'invoice.*'],
      [{ subscribedEvents: ['*'] }, 'webhook.ping'],
      [{ subscribedEvents: ['product.'] }, 'product.'],
      [{ subscribedEvents: ['product.created.*'] }, 'product.created.*'],
      [{ colour: 'red' }, 'colour'],
      [{ description: 7 }, 'description'],
      [{ propagateTrace: 'yes' }, 'propagateTrace'],
    ];
    for (const [body, mention] of cases) {
      const res = await t.call(key, 'POST', '/v1/webhooks/endpoints', { url: URL_A, subscribedEvents: ['product.*'], ...body });
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION');
      expect(res.json().error.message, JSON.stringify(body)).toContain(mention);
    }
    const unknownType = await t.call(key, 'POST', '/v1/webhooks/endpoints', { url: URL_A, subscribedEvents: ['invoice.created'] });
    for (const { type } of EVENT_CATALOG) expect(unknownType.json().error.message).toContain(type);
    expect((await t.call(key, 'GET', '/v1/webhooks/endpoints?limit=100')).json().data.length).toBe(before);
  });

  it('accepts catalog types and prefix patterns of them', async () => {
    for (const subscribedEvents of [['product.*'], ['webhook.*'], ['webhook.endpoint.*'], ['webhook.endpoint.auto_disabled', 'product.deleted']]) {
      expect((await create({ subscribedEvents })).subscribedEvents).toEqual(subscribedEvents);
    }
  });

  it('accepts http:// only where private targets are allowed', async () => {
    const local = await startTestApp({ config: { ...unlimited, allowPrivateTargets: true } });
    try {
      const res = await local.call(local.demo.workspaces[0].apiKey, 'POST', '/v1/webhooks/endpoints', {
        url: 'http://127.0.0.1:8080/hook',
        subscribedEvents: ['product.*'],
      });
      expect(res.statusCode).toBe(201);
    } finally {
      await local.close();
    }
  });

  it('serves the event-type catalog as a small-set list', async () => {
    const res = await t.call(key, 'GET', '/v1/webhooks/endpoints/event-types?limit=2');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      data: EVENT_CATALOG.map(({ type, description }) => ({ type, description })),
      nextPageUrl: null,
      previousPageUrl: null,
    });
    // Both ways an endpoint is disabled for it are named: failures in a row, and a 410 Gone.
    const disabled = res.json().data.find((e: { type: string }) => e.type === 'webhook.endpoint.auto_disabled');
    expect(disabled.description).toMatch(/5 consecutive failed deliveries.*410 Gone/);
    expect((await t.call(key, 'GET', '/v1/webhooks/endpoints/event-types?page=abc')).json().error.code).toBe('VALIDATION');
    expect((await t.call(key, 'GET', '/v1/webhooks/endpoints/event-types?limit=0')).statusCode).toBe(400);
  });

  it('lists endpoints newest first with keyset pages', async () => {
    const ws = t.demo.workspaces[1];
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      clock.advance(1000);
      ids.unshift((await create({ description: `n${i}` }, ws.apiKey)).id);
    }
    const first = (await t.call(ws.apiKey, 'GET', '/v1/webhooks/endpoints?limit=2')).json();
    expect(first.data.map((e: { id: string }) => e.id)).toEqual(ids.slice(0, 2));
    expect(first.previousPageUrl).toBeNull();
    const second = (await t.call(ws.apiKey, 'GET', pathOf(first.nextPageUrl))).json();
    expect(second.data.map((e: { id: string }) => e.id)).toEqual(ids.slice(2));
    expect(second.nextPageUrl).toBeNull();
    const back = (await t.call(ws.apiKey, 'GET', pathOf(second.previousPageUrl))).json();
    expect(back.data.map((e: { id: string }) => e.id)).toEqual(ids.slice(0, 2));
    const tampered = await t.call(ws.apiKey, 'GET', pathOf(first.nextPageUrl).replace('limit=2', 'limit=3'));
    expect(tampered.statusCode).toBe(400);
  });

  it('rotates the secret: both sign for 24 hours, then only the new one', async () => {
    const endpoint = await create();
    const res = await t.call(key, 'POST', `/v1/webhooks/endpoints/${endpoint.id}/rotate-secret`);
    expect(res.statusCode).toBe(200);
    const { secret, previousSecretExpiresAt } = res.json();
    expect(secret).toMatch(SECRET);
    expect(secret).not.toBe(endpoint.secret);
    expect(previousSecretExpiresAt).toBe(new Date(clock.now().getTime() + 24 * 3600_000).toISOString());
    expect((await t.call(key, 'GET', `/v1/webhooks/endpoints/${endpoint.id}`)).body).not.toContain(secret);

    const row = (await findEndpoint(t.ctx.db, t.demo.workspaces[0].id, endpoint.id))!;
    expect(signingSecrets(t.ctx.secrets, row, clock.now())).toEqual([secret, endpoint.secret]);
    clock.advance(24 * 3600_000 - 1);
    expect(signingSecrets(t.ctx.secrets, row, clock.now())).toEqual([secret, endpoint.secret]);
    clock.advance(1);
    expect(signingSecrets(t.ctx.secrets, row, clock.now())).toEqual([secret]);
  });

  it('lets a viewer read but not write; API keys and admins write', async () => {
    const ws = t.demo.workspaces[0];
    const endpoint = await create();
    const viewer = userOf(t.demo, 'viewer').token;
    const header = { 'service-workspace-id': ws.id };
    expect((await t.call(viewer, 'GET', '/v1/webhooks/endpoints', undefined, header)).statusCode).toBe(200);
    expect((await t.call(viewer, 'GET', `/v1/workspaces/${ws.id}/webhooks/endpoints/${endpoint.id}`)).statusCode).toBe(200);
    expect((await t.call(viewer, 'GET', `/v1/workspaces/${ws.id}/webhooks/endpoints/event-types`)).statusCode).toBe(200);
    for (const [method, path, body] of [
      ['POST', '', { url: URL_A, subscribedEvents: ['product.*'] }],
      ['PATCH', `/${endpoint.id}`, { active: false }],
      ['DELETE', `/${endpoint.id}`, undefined],
      ['POST', `/${endpoint.id}/rotate-secret`, undefined],
      ['POST', `/${endpoint.id}/send-test-event`, undefined],
    ] as const) {
      const res = await t.call(viewer, method, `/v1/workspaces/${ws.id}/webhooks/endpoints${path}`, body);
      expect(res.statusCode, `${method} ${path}`).toBe(403);
      expect(res.json().error.message).toContain('workspace:developer:write');
    }
    expect((await t.call(key, 'GET', `/v1/webhooks/endpoints/${endpoint.id}`)).json().active).toBe(true);

    const admin = userOf(t.demo, 'admin').token;
    expect((await t.call(admin, 'PATCH', `/v1/workspaces/${ws.id}/webhooks/endpoints/${endpoint.id}`, { description: 'by admin' })).statusCode).toBe(200);
    const outsider = userOf(t.demo, 'outsider').token;
    expect((await t.call(outsider, 'GET', `/v1/workspaces/${ws.id}/webhooks/endpoints`)).statusCode).toBe(403);
    expect((await t.call(null, 'GET', '/v1/webhooks/endpoints')).statusCode).toBe(401);
  });

  it("answers 404 for another workspace's endpoint and for ids of the wrong shape", async () => {
    const other = await create({}, t.demo.workspaces[1].apiKey);
    for (const id of [other.id, 'whe_123', 'prd_01jd3x0000000000000000000', 'x'.repeat(150)]) {
      for (const [method, path, body] of [
        ['GET', '', undefined],
        ['PATCH', '', { active: false }],
        ['DELETE', '', undefined],
        ['POST', '/rotate-secret', undefined],
        ['POST', '/send-test-event', undefined],
      ] as const) {
        const res = await t.call(key, method, `/v1/webhooks/endpoints/${id}${path}`, body);
        expect(res.statusCode, `${method} ${id}${path}`).toBe(404);
        expect(res.json().error.code).toBe('NOT_FOUND');
      }
    }
    expect((await t.call(t.demo.workspaces[1].apiKey, 'GET', `/v1/webhooks/endpoints/${other.id}`)).json().active).toBe(true);
  });

  it('documents every webhook route in the OpenAPI document', async () => {
    const doc = (await t.call(null, 'GET', '/openapi.json')).json();
    for (const prefix of ['/v1', '/v1/workspaces/{workspaceId}']) {
      expect(Object.keys(doc.paths[`${prefix}/webhooks/endpoints`])).toEqual(expect.arrayContaining(['get', 'post']));
      expect(Object.keys(doc.paths[`${prefix}/webhooks/endpoints/{endpointId}`])).toEqual(expect.arrayContaining(['get', 'patch', 'delete']));
      expect(doc.paths[`${prefix}/webhooks/endpoints/{endpointId}/send-test-event`].post.responses).toHaveProperty('409');
      expect(doc.paths[`${prefix}/webhooks/deliveries/{deliveryId}/replay`].post.responses).toHaveProperty('409');
      expect(doc.paths[`${prefix}/webhooks/endpoints/event-types`]).toHaveProperty('get');
      expect(doc.paths[`${prefix}/webhooks/deliveries`]).toHaveProperty('get');
    }
    expect(doc.paths['/v1/notifications']).toHaveProperty('get');
    expect(doc.components.schemas).toHaveProperty('WebhookEndpoint');
    expect(doc.components.schemas).toHaveProperty('WebhookDelivery');
  });
});
