import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USER_AGENT } from '../../src/engine/delivery/attempt.js';
import { userOf, type TestApp } from '../helpers/app.js';
import { closeAppAndReceiver, createProduct, deliveriesOf, openAppAndReceiver, testWorker, verifyBySpec } from '../helpers/delivery.js';
import type { Receiver } from '../helpers/receiver.js';

/** Values that stand for a receiver's credentials: they must reach it and appear nowhere else. */
const API_KEY = 'rcv_live_4f1d9c0a7b2e';
const TENANT = 'tenant-acme-0042';

describe('endpoint headers', () => {
  let t: TestApp;
  let receiver: Receiver;
  let key: string;
  // The system clock: the receiver's verifier rejects timestamps more than 5 minutes from its own.
  beforeAll(async () => {
    ({ t, receiver } = await openAppAndReceiver({ config: { allowPrivateTargets: true } }));
    key = t.demo.workspaces[0].apiKey;
  });
  afterAll(() => closeAppAndReceiver(t, receiver));

  const createEndpoint = async (body: Record<string, unknown>) =>
    t.call(key, 'POST', '/v1/webhooks/endpoints', { url: `${receiver.url}/in`, subscribedEvents: ['product.*'], ...body });
  const endpointCount = async () => Number((await t.ctx.db.query<{ n: string }>('SELECT count(*) AS n FROM webhook_endpoints'))[0].n);
  const storedHeaders = async (id: string) =>
    (await t.ctx.db.query<{ headers_enc: string | null }>('SELECT headers_enc FROM webhook_endpoints WHERE id = $1', [id]))[0].headers_enc;

  it('sends them with every delivery, the signature still verifying, and keeps them encrypted at rest', async () => {
    const res = await createEndpoint({ headers: { 'X-Api-Key': API_KEY, 'x-tenant': TENANT } });
    expect(res.statusCode).toBe(201);
    const endpoint = res.json();
    // Names are case-insensitive in HTTP: kept in lower case.
    expect(endpoint.headers).toEqual({ 'x-api-key': API_KEY, 'x-tenant': TENANT });

    const sealed = await storedHeaders(endpoint.id);
    expect(sealed).not.toBeNull();
    expect(sealed).not.toContain(API_KEY);
    expect(sealed).not.toContain(TENANT);
    expect(Buffer.from(sealed!, 'utf8').toString('latin1')).not.toContain('x-api-key');

    await createProduct(t, 'Credentialed hat');
    expect(await testWorker(t).runDue()).toBe(1);
    expect(receiver.requests).toHaveLength(1);
    const received = receiver.requests[0];
    expect(received.headers['x-api-key']).toBe(API_KEY);
    expect(received.headers['x-tenant']).toBe(TENANT);
    expect(received.headers['user-agent']).toBe(USER_AGENT);
    expect(received.headers['content-type']).toBe('application/json');
    expect(new Webhook(endpoint.secret).verify(received.body, received.flatHeaders)).toEqual(JSON.parse(received.body));
    expect(verifyBySpec(endpoint.secret, received.flatHeaders, received.raw)).toBe(true);

    // The delivery log keeps the names, never the values: in the attempts log, on the delivery row
    // and in what the API shows of both.
    const [delivery] = await deliveriesOf(t, endpoint.id);
    expect(delivery.status).toBe('success');
    expect(delivery.request_headers).toMatchObject({ 'x-api-key': '[redacted]', 'x-tenant': '[redacted]', 'webhook-id': delivery.id });
    const attempts = await t.ctx.db.query('SELECT * FROM webhook_delivery_attempts WHERE delivery_id = $1', [delivery.id]);
    expect(attempts).toHaveLength(1);
    for (const text of [JSON.stringify(delivery), JSON.stringify(attempts)]) {
      expect(text).not.toContain(API_KEY);
      expect(text).not.toContain(TENANT);
    }
    const listed = await t.call(key, 'GET', `/v1/webhooks/deliveries/${delivery.id}/attempts`);
    expect(listed.statusCode).toBe(200);
    expect(listed.json().data[0].requestHeaders).toMatchObject({ 'x-api-key': '[redacted]', 'x-tenant': '[redacted]' });
    const detail = await t.call(key, 'GET', `/v1/webhooks/deliveries/${delivery.id}`);
    expect(detail.json().delivery.requestHeaders).toMatchObject({ 'x-api-key': '[redacted]' });
    for (const body of [listed.body, detail.body]) {
      expect(body).not.toContain(API_KEY);
      expect(body).not.toContain(TENANT);
    }
  });

  it('shows the values to credentials that may change the endpoint, and only the names to readers', async () => {
    const ws = t.demo.workspaces[0];
    const { id } = (await createEndpoint({ headers: { 'x-api-key': API_KEY } })).json();
    const admin = userOf(t.demo, 'admin').token;
    const viewer = userOf(t.demo, 'viewer').token;
    const path = `/v1/workspaces/${ws.id}/webhooks/endpoints`;
    expect((await t.call(key, 'GET', `/v1/webhooks/endpoints/${id}`)).json().headers).toEqual({ 'x-api-key': API_KEY });
    expect((await t.call(admin, 'GET', `${path}/${id}`)).json().headers).toEqual({ 'x-api-key': API_KEY });

    const one = await t.call(viewer, 'GET', `${path}/${id}`);
    expect(one.statusCode).toBe(200);
    expect(one.json().headers).toEqual({ 'x-api-key': '[redacted]' });
    const list = await t.call(viewer, 'GET', path);
    expect(list.json().data.find((e: { id: string }) => e.id === id).headers).toEqual({ 'x-api-key': '[redacted]' });
    expect(one.body + list.body).not.toContain(API_KEY);
  });

  it('replaces them with PATCH and clears them with null, the next delivery following suit', async () => {
    const { id } = (await createEndpoint({ headers: { 'x-api-key': API_KEY, 'x-tenant': TENANT } })).json();
    const replaced = await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${id}`, { headers: { 'x-region': 'eu-west' } });
    expect(replaced.statusCode).toBe(200);
    expect(replaced.json().headers).toEqual({ 'x-region': 'eu-west' });

    const before = receiver.requests.length;
    await createProduct(t, 'Regional hat');
    await testWorker(t).runDue();
    const sent = receiver.requests.slice(before).find((r) => r.headers['x-region'] !== undefined)!;
    expect(sent.headers['x-region']).toBe('eu-west');
    expect(sent.headers['x-api-key']).toBeUndefined();

    const cleared = await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${id}`, { headers: null });
    expect(cleared.json().headers).toEqual({});
    expect(await storedHeaders(id)).toBeNull();
    // Deliveries already made keep their redacted log; new ones carry only the service's headers.
    const [latest] = (await deliveriesOf(t, id)).slice(-1);
    expect(latest.request_headers).toMatchObject({ 'x-region': '[redacted]' });
  });

  it('refuses reserved, malformed and excess headers with a 400 naming them, and changes nothing', async () => {
    const { id } = (await createEndpoint({ headers: { 'x-api-key': API_KEY } })).json();
    const sealed = await storedHeaders(id);
    const refused: [Record<string, unknown>, string][] = [
      [{ 'webhook-id': 'x' }, 'webhook-id'],
      [{ 'Webhook-Signature': 'v1,abc' }, 'webhook-signature'],
      [{ 'content-type': 'text/plain' }, 'content-type'],
      [{ 'Content-Length': '10' }, 'content-length'],
      [{ host: 'evil.example' }, 'host'],
      [{ 'user-agent': 'mine/1.0' }, 'user-agent'],
      [{ connection: 'close' }, 'connection'],
      [{ 'keep-alive': 'timeout=5' }, 'keep-alive'],
      [{ 'transfer-encoding': 'chunked' }, 'transfer-encoding'],
      [{ te: 'trailers' }, 'body.headers.te"'],
      [{ trailer: 'x' }, 'trailer'],
      [{ upgrade: 'websocket' }, 'upgrade'],
      [{ expect: '100-continue' }, 'expect'],
      [{ 'proxy-authorization': 'Basic x' }, 'proxy-authorization'],
      [{ 'bad name': 'x' }, 'bad name'],
      [{ 'x-café': 'x' }, 'x-café'],
      [{ '': 'x' }, 'not a valid header name'],
      [{ 'x-a': 'line\r\nx-injected: 1' }, 'x-a'],
      [{ 'x-a': ' padded' }, 'x-a'],
      [{ 'x-a': '' }, 'x-a'],
      [{ 'x-a': 'é' }, 'x-a'],
      [{ 'x-a': 'a'.repeat(1001) }, 'headers'],
      [{ 'X-Dup': '1', 'x-dup': '2' }, 'x-dup'],
      [{ 'x-a': 1 }, 'headers'],
      [Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`x-h${i}`, 'v'])), 'headers'],
    ];
    const count = await endpointCount();
    for (const [headers, named] of refused) {
      for (const res of [await createEndpoint({ headers }), await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${id}`, { headers })]) {
        expect(res.statusCode, JSON.stringify(headers)).toBe(400);
        const { error } = res.json();
        expect(error.code).toBe('VALIDATION');
        expect(JSON.stringify(error).toLowerCase(), JSON.stringify(headers)).toContain(named.toLowerCase());
      }
    }
    expect(await endpointCount()).toBe(count);
    expect(await storedHeaders(id)).toBe(sealed);

    // Twenty is the limit, not beyond it.
    const twenty = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`x-h${i}`, `v${i}`]));
    const ok = await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${id}`, { headers: twenty });
    expect(ok.statusCode).toBe(200);
    expect(Object.keys(ok.json().headers)).toHaveLength(20);
  });
});
