import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSvcClient, SvcError, type Order, type PushDevice, type SvcClient } from '../../sdk/src/index.js';
import { userOf } from '../helpers/app.js';
import { startLiveApp, type LiveApp } from '../helpers/live.js';
import { browserKeys } from '../helpers/push.js';
import { startReceiver } from '../helpers/receiver.js';

/** The SDK against the service listening on 127.0.0.1: calls typed from the document, pages, errors. */
describe('SDK client', () => {
  let t: LiveApp;
  let svc: SvcClient;
  const requested: string[] = [];
  /** The global fetch, noting each URL it is asked for. */
  const noting = (request: Request) => (requested.push(request.url), fetch(request));

  beforeAll(async () => {
    t = await startLiveApp();
    svc = createSvcClient({ baseUrl: t.base, token: t.demo.workspaces[0].apiKey, fetch: noting });
  });
  afterAll(() => t?.close());

  /** The SvcError a call rejects with. */
  async function refusal(call: Promise<unknown>): Promise<SvcError> {
    const error = await call.then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(SvcError);
    return error as SvcError;
  }

  it('creates, reads, updates and lists with the credential and base URL given once', async () => {
    const hat = await svc.POST('/v1/products', { body: { name: 'SDK hat', price: { amount: 1500, currency: 'EUR' }, metadata: { size: 'M' } } });
    expect(hat).toMatchObject({ id: expect.stringMatching(/^prd_/), name: 'SDK hat', price: { amount: 1500, currency: 'EUR' }, active: true });
    expect(await svc.GET('/v1/products/{productId}', { params: { path: { productId: hat.id } } })).toEqual(hat);
    const renamed = await svc.PATCH('/v1/products/{productId}', { params: { path: { productId: hat.id } }, body: { name: 'SDK cap' } });
    expect(renamed.name).toBe('SDK cap');
    const page = await svc.GET('/v1/products', { params: { query: { limit: 5 } } });
    expect(page.data[0]).toEqual(renamed);
    expect(requested.every((url) => url.startsWith(`${t.base}/v1/`))).toBe(true);
  });

  it('retries a POST safely with an Idempotency-Key header: the same product, and a refusal for another body', async () => {
    const key = `sdk-${Date.now()}`;
    const body = { name: 'SDK retried hat' };
    const first = await svc.POST('/v1/products', { params: { header: { 'idempotency-key': key } }, body });
    const again = await svc.POST('/v1/products', { params: { header: { 'idempotency-key': key } }, body });
    expect(again).toEqual(first);
    const mismatch = await refusal(svc.POST('/v1/products', { params: { header: { 'idempotency-key': key } }, body: { name: 'Another' } }));
    expect([mismatch.status, mismatch.code]).toEqual([422, 'IDEMPOTENCY_MISMATCH']);
    const named = (await t.call(t.demo.workspaces[0].apiKey, 'GET', '/v1/products?limit=100')).json().data.filter((p: { name: string }) => p.name === body.name);
    expect(named).toHaveLength(1);
  });

  it('paginates over nextPageUrl with an async iterator, fetching pages as the loop asks', async () => {
    for (let i = 0; i < 23; i++) await svc.POST('/v1/products', { body: { name: `Paged ${i}` } });
    const all = (await t.call(t.demo.workspaces[0].apiKey, 'GET', '/v1/products?limit=100')).json().data.map((p: { id: string }) => p.id);
    expect(all.length).toBeGreaterThanOrEqual(24);

    requested.length = 0;
    const seen: string[] = [];
    for await (const product of svc.paginate('/v1/products', { params: { query: { limit: 10 } } })) seen.push(product.id);
    expect(seen).toEqual(all);
    expect(requested).toHaveLength(Math.ceil(all.length / 10));
    expect(requested.slice(1).every((url) => new URL(url).searchParams.has('page'))).toBe(true);

    // A call's own headers go with every page: a personal access token's workspace, here.
    const owner = createSvcClient({ baseUrl: t.base, token: userOf(t.demo, 'owner').token });
    const pages = owner.paginate('/v1/products', { params: { query: { limit: 10 } }, headers: { 'service-workspace-id': t.demo.workspaces[0].id } });
    const viaToken: string[] = [];
    for await (const product of pages) viaToken.push(product.id);
    expect(viaToken).toEqual(all);

    requested.length = 0;
    for await (const product of svc.paginate('/v1/products', { params: { query: { limit: 10 } } })) {
      expect(product.id).toBe(all[0]);
      break;
    }
    expect(requested).toHaveLength(1);
  });

  it('creates an order, moves it and reads its events\' subject as an Order, all typed from the document', async () => {
    const scarf = await svc.POST('/v1/products', { body: { name: 'SDK scarf', price: { amount: 2500, currency: 'EUR' } } });
    const order: Order = await svc.POST('/v1/orders', { body: { lineItems: [{ productId: scarf.id, quantity: 2 }], metadata: { channel: 'sdk' } } });
    expect(order).toMatchObject({ status: 'pending', currency: 'EUR', amountTotal: 5000, lineItems: [{ productId: scarf.id, name: 'SDK scarf', quantity: 2 }] });
    const paid = await svc.POST('/v1/orders/{orderId}/pay', { params: { path: { orderId: order.id } } });
    expect(paid.status).toBe('paid');
    const refused = await refusal(svc.POST('/v1/orders/{orderId}/cancel', { params: { path: { orderId: order.id } } }));
    expect(refused).toMatchObject({ status: 409, code: 'INVALID_STATE' });
    const listed = await svc.GET('/v1/orders', { params: { query: { status: 'paid', expand: ['lineItems'] } } });
    expect(listed.data[0]).toEqual(paid);
    const [event] = (await svc.GET('/v1/events', { params: { query: { type: 'order.paid', limit: 1 } } })).data;
    if (event.type !== 'order.paid') throw new Error(`unexpected ${event.type}`);
    const subject: Order | null = await svc.fetchSubject(event);
    expect(subject).toEqual(paid);
  });

  it('sends array query parameters comma-separated, as the document declares expand', async () => {
    const owner = createSvcClient({ baseUrl: t.base, token: userOf(t.demo, 'owner').token });
    const orgs = await owner.GET('/v1/organizations', { params: { query: { expand: ['workspaces'] } } });
    expect(orgs.data.length).toBeGreaterThan(0);
    for (const org of orgs.data) expect(org.workspaces?.length).toBeGreaterThan(0);
    const plain = await owner.GET('/v1/organizations');
    for (const org of plain.data) expect(org.workspaces).toBeUndefined();
  });

  it('acts in the workspace given once with a personal access token', async () => {
    const token = userOf(t.demo, 'owner').token;
    const bound = createSvcClient({ baseUrl: t.base, token, workspaceId: t.demo.workspaces[0].id });
    expect((await bound.GET('/v1/products', { params: { query: { limit: 1 } } })).data).toHaveLength(1);
    const unbound = createSvcClient({ baseUrl: t.base, token });
    expect((await refusal(unbound.GET('/v1/products'))).code).toBe('VALIDATION');
  });

  it("registers, lists and removes a user's push devices, and reads the notification types and the push key", async () => {
    const me = createSvcClient({ baseUrl: t.base, token: userOf(t.demo, 'viewer').token });
    const types = [];
    for await (const type of me.paginate('/v1/notifications/types')) types.push(type.type);
    expect(types).toContain('webhook.endpoint.auto_disabled');
    const { publicKey } = await me.GET('/v1/notifications/push-key');
    expect(Buffer.from(publicKey, 'base64url')).toHaveLength(65);
    const keys = browserKeys();
    const device: PushDevice = await me.POST('/v1/me/push-devices', { body: { endpoint: 'https://203.0.113.8/push/sdk', keys: { p256dh: keys.p256dh, auth: keys.auth }, name: 'SDK' } });
    expect((await me.GET('/v1/me/push-devices')).data).toEqual([device]);
    expect(await me.DELETE('/v1/me/push-devices/{deviceId}', { params: { path: { deviceId: device.id } } })).toEqual({ id: device.id, deleted: true });
    const refused = await refusal(svc.GET('/v1/me/push-devices'));
    expect([refused.status, refused.code]).toEqual([403, 'FORBIDDEN']);
  });

  it('throws SvcError with the status, code, message, requestId and details of the envelope', async () => {
    requested.length = 0;
    const missing = await refusal(svc.GET('/v1/products/{productId}', { params: { path: { productId: 'prd_missing' } } }));
    expect(missing).toMatchObject({ name: 'SvcError', status: 404, code: 'NOT_FOUND', message: 'No such product.', requestId: expect.stringMatching(/^req_/) });

    const invalid = await refusal(svc.POST('/v1/products', { body: { name: '' } }));
    expect(invalid).toMatchObject({ status: 400, code: 'VALIDATION' });
    expect(invalid.details).toEqual([expect.objectContaining({ path: 'body.name' })]);

    const stranger = createSvcClient({ baseUrl: t.base, token: 'svc_sk_' + 'A'.repeat(36) });
    expect(await refusal(stranger.GET('/v1/products'))).toMatchObject({ status: 401, code: 'UNAUTHENTICATED' });

    const viewer = createSvcClient({ baseUrl: t.base, token: userOf(t.demo, 'viewer').token, workspaceId: t.demo.workspaces[0].id });
    const forbidden = await refusal(viewer.POST('/v1/products', { body: { name: 'No' } }));
    expect(forbidden).toMatchObject({ status: 403, code: 'FORBIDDEN', message: expect.stringContaining('workspace:products:write') });

    const endpoint = await svc.POST('/v1/webhooks/endpoints', { body: { url: 'https://example.com/hook', subscribedEvents: ['product.*'] } });
    await svc.PATCH('/v1/webhooks/endpoints/{endpointId}', { params: { path: { endpointId: endpoint.id } }, body: { active: false } });
    const inactive = await refusal(svc.POST('/v1/webhooks/endpoints/{endpointId}/send-test-event', { params: { path: { endpointId: endpoint.id } } }));
    expect(inactive).toMatchObject({ status: 409, code: 'ENDPOINT_INACTIVE' });

    // The requestId is the one the service logged the request under: its Request-Id header.
    const { response } = await svc.raw.GET('/v1/products/{productId}', { params: { path: { productId: 'prd_missing' } } });
    expect(response.headers.get('request-id')).toMatch(/^req_/);
    expect(requested).toHaveLength(6);
  });

  it('reports the wait of a 429, and an answer that is not the envelope', async () => {
    const owner = createSvcClient({ baseUrl: t.base, token: userOf(t.demo, 'owner').token });
    const workspaceId = t.demo.workspaces[0].id;
    const { key } = await owner.POST('/v1/workspaces/{workspaceId}/api-keys', { params: { path: { workspaceId } }, body: { name: 'one a minute', rateLimit: 1 } });
    const slow = createSvcClient({ baseUrl: t.base, token: key });
    await slow.GET('/v1/products');
    const error = await refusal(slow.GET('/v1/products'));
    expect(error).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
    expect(error.retryAfter).toBeGreaterThan(0);

    // A proxy in front of the service that answers with a page of its own.
    const proxy = await startReceiver(() => ({ status: 502, body: '<html>bad gateway</html>', headers: { 'content-type': 'text/html' } }));
    try {
      const behind = createSvcClient({ baseUrl: proxy.url, token: t.demo.workspaces[0].apiKey });
      expect(await refusal(behind.GET('/v1/me'))).toMatchObject({ status: 502, code: 'UNEXPECTED_RESPONSE', requestId: null });
    } finally {
      await proxy.close();
    }
  });
});
