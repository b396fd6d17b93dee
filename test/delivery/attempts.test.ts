import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { MAX_RESPONSE_BODY_BYTES } from '../../src/engine/destinations/sender.js';
import { DeliveryWorker } from '../../src/engine/delivery/worker.js';
import { pathOf, startTestApp, type TestApp } from '../helpers/app.js';
import { addEndpoint, createProduct, deliveriesOf } from '../helpers/delivery.js';
import { expectError } from '../helpers/expect.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

const MINUTE = 60_000;

interface Attempt {
  attempt: number;
  startedAt: string;
  responseStatus: number | null;
  responseTimeMs: number | null;
  error: string | null;
  requestHeaders: Record<string, string> | null;
  responseHeaders: Record<string, string> | null;
  responseBody: string | null;
}
interface AttemptPage {
  data: Attempt[];
  nextPageUrl: string | null;
  previousPageUrl: string | null;
}

/** Every attempt of a delivery is kept and listed, newest first. */
describe('delivery attempts log', () => {
  let t: TestApp;
  let receiver: Receiver;
  let key: string;
  // Near the real time, so that the official verifier accepts the stored timestamps.
  const clock = new ManualClock(Date.now());
  const big = 'y'.repeat(MAX_RESPONSE_BODY_BYTES + 5000);

  const attempts = async (url: string, token = key): Promise<AttemptPage> => {
    const res = await t.call(token, 'GET', url);
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  /** Each test's endpoint is paused at its end, so later tests' events are not sent to it. */
  const pause = async (endpointId: string) => expect((await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${endpointId}`, { active: false })).statusCode).toBe(200);
  const worker = () =>
    new DeliveryWorker(t.ctx, {
      onError: (error, during) => {
        throw new Error(`worker ${during} failed: ${(error as Error).message}`);
      },
    });

  beforeAll(async () => {
    // Three attempts at most: now, a minute later, two minutes later.
    t = await startTestApp({ clock, config: { allowPrivateTargets: true, retryScheduleMs: [MINUTE, MINUTE], rateLimitApiKey: 1_000_000 } });
    key = t.demo.workspaces[0].apiKey;
    // Per delivery (by webhook-id): a 500, then a reset connection, then a 200 with a body over the kept size.
    const seen = new Map<string, number>();
    receiver = await startReceiver((request) => {
      const id = String(request.headers['webhook-id']);
      const n = seen.get(id) ?? 0;
      seen.set(id, n + 1);
      if (request.url === '/always-fails') return { status: 503, body: 'down' };
      if (n === 0) return { status: 500, body: 'boom', headers: { 'content-type': 'text/plain', 'x-trace': 'a1' } };
      if (n === 1) return { destroy: true, reset: true };
      return { status: 200, body: big };
    });
  });
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  it('keeps the three attempts of a delivery that failed twice and then succeeded', async () => {
    const { id: endpointId, secret } = await addEndpoint(t, `${receiver.url}/thrice`);
    await createProduct(t, 'Hat');
    const start = clock.now().getTime();
    const w = worker();
    for (const offset of [0, MINUTE, 2 * MINUTE]) {
      clock.set(new Date(start + offset));
      expect(await w.runDue()).toBe(1);
    }
    const [row] = await deliveriesOf(t, endpointId);
    expect(row).toMatchObject({ status: 'success', attempt: 3 });
    const sent = receiver.requests.filter((r) => r.headers['webhook-id'] === row.id);
    expect(sent).toHaveLength(3);

    const page = await attempts(`/v1/webhooks/deliveries/${row.id}/attempts`);
    expect(page.nextPageUrl).toBeNull();
    expect(page.previousPageUrl).toBeNull();
    expect(page.data.map((a) => a.attempt)).toEqual([3, 2, 1]);
    expect(page.data.map((a) => Date.parse(a.startedAt))).toEqual([start + 2 * MINUTE, start + MINUTE, start]);
    const [third, second, first] = page.data;
    expect(Object.keys(first).sort()).toEqual(['attempt', 'error', 'requestHeaders', 'responseBody', 'responseHeaders', 'responseStatus', 'responseTimeMs', 'startedAt']);
    expect(first).toMatchObject({ responseStatus: 500, error: 'HTTP 500', responseBody: 'boom' });
    expect(first.responseHeaders).toMatchObject({ 'content-type': 'text/plain', 'x-trace': 'a1' });
    expect(second).toMatchObject({ responseStatus: null, error: 'connection reset by the receiver', responseBody: null, responseHeaders: null });
    expect(third).toMatchObject({ responseStatus: 200, error: null });
    // The body is kept truncated, as on the delivery.
    expect(third.responseBody).toBe(big.slice(0, MAX_RESPONSE_BODY_BYTES));
    for (const a of page.data) expect(a.responseTimeMs).toBeGreaterThanOrEqual(0);

    // Each attempt's request headers are those it sent: its own timestamp and a signature that
    // verifies against what the receiver got; the signing secret appears nowhere.
    for (const [i, a] of [first, second, third].entries()) {
      const received = sent[i];
      expect(a.requestHeaders).toEqual({
        'content-type': 'application/json',
        'user-agent': received.flatHeaders['user-agent'],
        'webhook-id': row.id,
        'webhook-timestamp': received.flatHeaders['webhook-timestamp'],
        'webhook-signature': received.flatHeaders['webhook-signature'],
      });
      expect(Number(a.requestHeaders!['webhook-timestamp'])).toBe(Math.floor(Date.parse(a.startedAt) / 1000));
      expect(new Webhook(secret).verify(received.body, a.requestHeaders!)).toEqual(JSON.parse(received.body));
    }
    const stored = await t.ctx.db.query<{ row: string }>('SELECT to_jsonb(a)::text AS row FROM webhook_delivery_attempts a WHERE delivery_id = $1', [row.id]);
    for (const text of [JSON.stringify(page), ...stored.map((r) => r.row)]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(secret.slice('whsec_'.length));
    }

    // The delivery's own fields are the latest attempt's.
    const { delivery } = (await t.call(key, 'GET', `/v1/webhooks/deliveries/${row.id}`)).json();
    expect(delivery).toMatchObject({ attempt: 3, status: 'success', responseStatus: 200, error: null, responseBody: third.responseBody });
    expect(delivery.requestHeaders).toEqual(third.requestHeaders);
    expect(delivery.responseTimeMs).toBe(third.responseTimeMs);

    // The endpoint's statistics count the three attempts.
    const stats = (await t.call(key, 'GET', `/v1/webhooks/endpoints/${endpointId}/stats?window=1h`)).json();
    expect(stats).toMatchObject({ attempts: 3, successes: 1, failures: 2 });
    expect(stats.successRate).toBeCloseTo(1 / 3, 10);
    expect(stats.series.reduce((n: number, b: { successes: number; failures: number }) => n + b.successes + b.failures, 0)).toBe(3);
    await pause(endpointId);
  });

  it('logs every attempt of a delivery that fails for good, the last one with the failure that ended it', async () => {
    const { id: endpointId } = await addEndpoint(t, `${receiver.url}/always-fails`);
    await createProduct(t, 'Doomed hat');
    const start = clock.now().getTime();
    const w = worker();
    for (const offset of [0, MINUTE, 2 * MINUTE]) {
      clock.set(new Date(start + offset));
      expect(await w.runDue()).toBe(1);
    }
    const [row] = await deliveriesOf(t, endpointId);
    expect(row).toMatchObject({ status: 'failed', attempt: 3 });
    const page = await attempts(`/v1/workspaces/${t.demo.workspaces[0].id}/webhooks/deliveries/${row.id}/attempts`);
    expect(page.data.map((a) => [a.attempt, a.responseStatus, a.error, a.responseBody])).toEqual([
      [3, 503, 'HTTP 503', 'down'],
      [2, 503, 'HTTP 503', 'down'],
      [1, 503, 'HTTP 503', 'down'],
    ]);
    // Nothing is sent or logged once it has failed.
    clock.advance(60 * MINUTE);
    expect(await w.runDue()).toBe(0);
    expect(await t.ctx.db.query('SELECT 1 FROM webhook_delivery_attempts WHERE delivery_id = $1', [row.id])).toHaveLength(3);
    await pause(endpointId);
  });

  it('keeps of the request its signature only, and reads an attempt kept whole (before migration 016) as it was kept', async () => {
    const [row] = await t.ctx.db.query<{ id: string }>("SELECT id FROM webhook_deliveries WHERE attempt = 3 AND status = 'success' ORDER BY id LIMIT 1");
    const kept = await t.ctx.db.query<{ attempt: number; request_signature: string | null; request_headers: unknown }>(
      'SELECT attempt, request_signature, request_headers FROM webhook_delivery_attempts WHERE delivery_id = $1 ORDER BY attempt',
      [row.id],
    );
    expect(kept).toHaveLength(3);
    for (const a of kept) {
      expect(a.request_signature).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
      // The endpoint has no headers of its own: nothing else of the request is stored.
      expect(a.request_headers).toBeNull();
    }
    const rebuilt = (await attempts(`/v1/webhooks/deliveries/${row.id}/attempts?limit=1`)).data[0];
    expect(rebuilt.requestHeaders!['webhook-signature']).toBe(kept[2].request_signature);

    // An attempt written before: every header in request_headers, no signature column.
    const whole = { 'content-type': 'application/json', 'user-agent': 'svc-webhooks/0.9', 'webhook-id': row.id, 'webhook-timestamp': '1767225600', 'webhook-signature': 'v1,old' };
    await t.ctx.db.query('UPDATE webhook_delivery_attempts SET request_signature = NULL, request_headers = $2 WHERE delivery_id = $1 AND attempt = 3', [row.id, JSON.stringify(whole)]);
    expect((await attempts(`/v1/webhooks/deliveries/${row.id}/attempts?limit=1`)).data[0].requestHeaders).toEqual(whole);
    expect((await t.call(key, 'GET', `/v1/webhooks/deliveries/${row.id}`)).json().delivery.requestHeaders).toEqual(whole);
  });

  it('pages newest first with limit, both ways, and binds a page token to its delivery', async () => {
    const [row] = await t.ctx.db.query<{ id: string }>("SELECT id FROM webhook_deliveries WHERE attempt = 3 AND status = 'success' ORDER BY id LIMIT 1");
    const [other] = await t.ctx.db.query<{ id: string }>("SELECT id FROM webhook_deliveries WHERE status = 'failed' LIMIT 1");
    const base = `/v1/webhooks/deliveries/${row.id}/attempts`;
    const first = await attempts(`${base}?limit=1`);
    expect(first.data.map((a) => a.attempt)).toEqual([3]);
    expect(first.previousPageUrl).toBeNull();
    const second = await attempts(pathOf(first.nextPageUrl!));
    expect(second.data.map((a) => a.attempt)).toEqual([2]);
    const third = await attempts(pathOf(second.nextPageUrl!));
    expect(third.data.map((a) => a.attempt)).toEqual([1]);
    expect(third.nextPageUrl).toBeNull();
    const back = await attempts(pathOf(third.previousPageUrl!));
    expect(back.data.map((a) => a.attempt)).toEqual([2]);
    expect((await attempts(`${base}?limit=2`)).data.map((a) => a.attempt)).toEqual([3, 2]);

    // A token of one delivery's attempts is refused for another's.
    const token = new URL(first.nextPageUrl!).searchParams.get('page')!;
    expectError(await t.call(key, 'GET', `/v1/webhooks/deliveries/${other.id}/attempts?limit=1&page=${encodeURIComponent(token)}`), 400, 'VALIDATION');
    for (const query of ['?limit=0', '?limit=101', '?page=garbage', '?status=success']) {
      expectError(await t.call(key, 'GET', `${base}${query}`), 400, 'VALIDATION');
    }
  });

  it('answers an empty list for a delivery not attempted yet, and 404 for an unknown or foreign one', async () => {
    await addEndpoint(t, `${receiver.url}/later`, ['product.updated']);
    const productId = await createProduct(t, 'Quiet hat');
    await t.call(key, 'PATCH', `/v1/products/${productId}`, { name: 'Quieter hat' });
    const [pending] = await t.ctx.db.query<{ id: string }>("SELECT id FROM webhook_deliveries WHERE status = 'pending' AND event_type = 'product.updated'");
    expect(await attempts(`/v1/webhooks/deliveries/${pending.id}/attempts`)).toEqual({ data: [], nextPageUrl: null, previousPageUrl: null });

    const [done] = await t.ctx.db.query<{ id: string }>("SELECT id FROM webhook_deliveries WHERE status = 'success' LIMIT 1");
    const other = t.demo.workspaces[1];
    expectError(await t.call(other.apiKey, 'GET', `/v1/webhooks/deliveries/${done.id}/attempts`), 404, 'NOT_FOUND');
    expectError(await t.call(other.apiKey, 'GET', `/v1/workspaces/${other.id}/webhooks/deliveries/${done.id}/attempts`), 404, 'NOT_FOUND');
    expectError(await t.call(key, 'GET', `/v1/webhooks/deliveries/whd_00000000000000000000000000/attempts`), 404, 'NOT_FOUND');
    expectError(await t.call(key, 'GET', `/v1/webhooks/deliveries/nope/attempts`), 404, 'NOT_FOUND');
  });
});
