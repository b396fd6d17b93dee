import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, pathOf, userOf, type TestApp } from './helpers/app.js';
import { deliveryCalls, startDeliveries, type Delivery } from './helpers/delivery-list.js';
import { expectError } from './helpers/expect.js';

/** The deliveries of startDeliveries (test/helpers/delivery-list.ts), one at a time: read, replayed, and kept from others. */
describe('webhook deliveries', () => {
  let t: TestApp;
  let key: string;
  let a: string;
  let b: string;
  let all: Delivery[];
  const clock = new ManualClock();

  const { list, ids, endpoint } = deliveryCalls(() => t, () => key);

  beforeAll(async () => {
    ({ t, key, a, b, all } = await startDeliveries(clock));
  });
  afterAll(() => t.close());

  it('retrieves a delivery with the body sent, its subject and the last attempt', async () => {
    const target = all[0];
    const res = await t.call(key, 'GET', `/v1/webhooks/deliveries/${target.id}`);
    expect(res.statusCode).toBe(200);
    const { delivery } = res.json();
    const event = await t.call(key, 'GET', `/v1/events/${target.eventId}`);
    expect(delivery).toEqual({
      ...target,
      nextAttemptAt: target.createdAt,
      sourceEventId: target.eventId,
      requestBody: event.json(),
      requestHeaders: null,
      responseBody: null,
      responseHeaders: null,
      subject: { id: event.json().subject.id, type: 'product' },
    });

    await t.ctx.db.query(
      `UPDATE webhook_deliveries SET attempt = 1, error = 'HTTP 500', response_status = 500, response_time_ms = 42,
              request_headers = $2, response_body = 'oops', response_headers = $3 WHERE id = $1`,
      [
        target.id,
        JSON.stringify({ 'webhook-id': target.id, 'webhook-timestamp': '1767225600', 'webhook-signature': 'v1,abc', authorization: 'Bearer x' }),
        JSON.stringify({ 'content-type': 'text/plain', 'set-cookie': ['a=1', 'b=2'] }),
      ],
    );
    const attempted = (await t.call(key, 'GET', `/v1/webhooks/deliveries/${target.id}`)).json().delivery;
    expect(attempted).toMatchObject({ attempt: 1, error: 'HTTP 500', responseStatus: 500, responseTimeMs: 42, responseBody: 'oops' });
    expect(attempted.requestHeaders).toEqual({ 'webhook-id': target.id, 'webhook-timestamp': '1767225600', 'webhook-signature': 'v1,abc' });
    expect(attempted.responseHeaders).toEqual({ 'content-type': 'text/plain', 'set-cookie': 'a=1, b=2' });
  });

  it('replays: a new pending row with the same body, the original unchanged', async () => {
    const original = all[2];
    const before = (await t.call(key, 'GET', `/v1/webhooks/deliveries/${original.id}`)).json();
    clock.advance(1000);
    const res = await t.call(key, 'POST', `/v1/webhooks/deliveries/${original.id}/replay`);
    expect(res.statusCode).toBe(201);
    const { delivery } = res.json();
    expect(delivery).toEqual({ id: expect.stringMatching(/^whd_/), endpointId: original.endpointId });
    expect(delivery.id).not.toBe(original.id);

    const replay = (await t.call(key, 'GET', `/v1/webhooks/deliveries/${delivery.id}`)).json().delivery;
    expect(replay).toMatchObject({ status: 'pending', attempt: 0, replayOf: original.id, eventType: original.eventType, createdAt: clock.now().toISOString() });
    expect(replay.eventId).toMatch(/^evt_/);
    expect(replay.eventId).not.toBe(original.eventId);
    expect(replay.requestBody).toEqual(before.delivery.requestBody);
    expect(replay.subject).toEqual(before.delivery.subject);
    const [rows] = await t.ctx.db.query<{ payload: string; body: string }>(
      'SELECT d.payload, e.body FROM webhook_deliveries d, events e WHERE d.id = $1 AND e.id = $2',
      [delivery.id, original.eventId],
    );
    expect(rows.payload).toBe(rows.body);
    expect((await t.call(key, 'GET', `/v1/webhooks/deliveries/${original.id}`)).json()).toEqual(before);
    expect(ids((await list(`?endpointId=${original.endpointId}&limit=1`)).data)).toEqual([delivery.id]);

    // A replay of a replay copies the same bytes again.
    const again = (await t.call(key, 'POST', `/v1/webhooks/deliveries/${delivery.id}/replay`)).json().delivery;
    const second = (await t.call(key, 'GET', `/v1/webhooks/deliveries/${again.id}`)).json().delivery;
    expect(second.replayOf).toBe(delivery.id);
    expect(second.requestBody).toEqual(before.delivery.requestBody);

    // The replay's event id is synthetic: sourceEventId names the event it sends, and the events
    // route says what the synthetic id is instead of a bare "No such event".
    expect([replay.sourceEventId, second.sourceEventId]).toEqual([original.eventId, original.eventId]);
    expect(expectError(await t.call(key, 'GET', `/v1/events/${replay.eventId}`), 404, 'NOT_FOUND').message).toBe(
      `${replay.eventId} is not an event of the log: it is the id replay ${delivery.id} of delivery ${original.id} was sent under; the event it carries is ${original.eventId}.`,
    );
    expect((await t.call(key, 'GET', `/v1/events/${original.eventId}`)).statusCode).toBe(200);
    // Not another workspace's: there, it is no event and no delivery either.
    const elsewhere = await t.call(t.demo.workspaces[1].apiKey, 'GET', `/v1/events/${replay.eventId}`);
    expect(expectError(elsewhere, 404, 'NOT_FOUND').message).toBe('No such event.');
  });

  it('filters by event: its deliveries, their replays and the replays of those, newest first', async () => {
    clock.advance(1000);
    const productId = (await t.call(key, 'POST', '/v1/products', { name: 'four' })).json().id;
    // Another event in the same millisecond: its deliveries' ids start the same way.
    const sibling = (await t.call(key, 'POST', '/v1/products', { name: 'five' })).json().id;
    const siblingEvent = (await t.call(key, 'GET', `/v1/events?subjectType=product&subjectId=${sibling}`)).json().data[0];
    const event = (await t.call(key, 'GET', `/v1/events?subjectType=product&subjectId=${productId}`)).json().data[0];
    const own = (await list(`?eventId=${event.id}`)).data;
    expect(own.map((d) => d.endpointId).sort()).toEqual([a, b].sort());
    expect(own.every((d) => d.eventId === event.id && d.replayOf === null)).toBe(true);
    const ofA = own.find((d) => d.endpointId === a)!.id;
    const ofB = own.find((d) => d.endpointId === b)!.id;

    const replay = async (id: string) => {
      clock.advance(1000);
      const res = await t.call(key, 'POST', `/v1/webhooks/deliveries/${id}/replay`);
      expect(res.statusCode, res.body).toBe(201);
      return res.json().delivery.id as string;
    };
    const r1 = await replay(ofA);
    const r2 = await replay(r1);
    const r3 = await replay(ofB);
    const family = (await list(`?eventId=${event.id}`)).data;
    expect(ids(family)).toEqual([r3, r2, r1, ...ids(own)]);
    const siblings = (await list(`?eventId=${siblingEvent.id}`)).data;
    expect(siblings).toHaveLength(2);
    expect(siblings.every((d) => d.eventId === siblingEvent.id && !ids(family).includes(d.id))).toBe(true);
    expect(siblings[0].id.slice(0, 14)).toBe(own[0].id.slice(0, 14));

    // Pages carry the filter; other filters narrow it.
    const first = await list(`?eventId=${event.id}&limit=2`);
    expect(ids(first.data)).toEqual([r3, r2]);
    expect(first.nextPageUrl).toContain(`eventId=${event.id}`);
    const walked = ids(first.data);
    for (let page = first; page.nextPageUrl; ) {
      page = await list(pathOf(page.nextPageUrl).replace('/v1/webhooks/deliveries', ''));
      walked.push(...ids(page.data));
    }
    expect(walked).toEqual(ids(family));
    const changed = new URL(first.nextPageUrl!);
    changed.searchParams.set('eventId', all[0].eventId);
    expectError(await t.call(key, 'GET', changed.pathname + changed.search), 400, 'VALIDATION');
    expect(ids((await list(`?eventId=${event.id}&endpointId=${b}`)).data)).toEqual([r3, ofB]);
    expect(ids((await list(`?eventId=${event.id}&status=failed`)).data)).toEqual([]);

    // A replay's own (synthetic) event id finds it and what replays it.
    const replayed = family.find((d) => d.id === r1)!;
    expect(ids((await list(`?eventId=${replayed.eventId}`)).data)).toEqual([r2, r1]);
    // Unknown, or another workspace's: nothing.
    expect((await list('?eventId=evt_00000000000000000000000000')).data).toEqual([]);
    const other = await t.call(t.demo.workspaces[1].apiKey, 'GET', `/v1/webhooks/deliveries?eventId=${event.id}`);
    expect(other.json().data).toEqual([]);
    expect((await t.call(t.demo.workspaces[1].apiKey, 'GET', `/v1/workspaces/${t.demo.workspaces[0].id}/webhooks/deliveries?eventId=${event.id}`)).statusCode).toBe(403);
  });

  it('refuses to replay to an inactive or deleted endpoint with 409 and adds nothing', async () => {
    const c = await endpoint(['product.*']);
    const ping = (await t.call(key, 'POST', `/v1/webhooks/endpoints/${c}/send-test-event`)).json();
    const pingReplay = await t.call(key, 'POST', `/v1/webhooks/deliveries/${ping.deliveryId}/replay`);
    expect(pingReplay.statusCode).toBe(201);
    const replayedPing = (await t.call(key, 'GET', `/v1/webhooks/deliveries/${pingReplay.json().delivery.id}`)).json().delivery;
    expect(replayedPing.requestBody).toEqual({ id: ping.eventId, type: 'webhook.ping', created: expect.any(String) });
    // A test event is in no log: neither the ping nor its replay has a source event.
    const sentPing = (await t.call(key, 'GET', `/v1/webhooks/deliveries/${ping.deliveryId}`)).json().delivery;
    expect([sentPing.sourceEventId, replayedPing.sourceEventId]).toEqual([null, null]);
    expect(expectError(await t.call(key, 'GET', `/v1/events/${ping.eventId}`), 404, 'NOT_FOUND').message).toBe(
      `${ping.eventId} is not an event of the log: it is the id test delivery ${ping.deliveryId} (webhook.ping) was sent under.`,
    );

    await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${c}`, { active: false });
    const count = (await list(`?endpointId=${c}`)).data.length;
    const paused = await t.call(key, 'POST', `/v1/webhooks/deliveries/${ping.deliveryId}/replay`);
    expect(paused.statusCode).toBe(409);
    expect(paused.json().error).toMatchObject({ code: 'ENDPOINT_INACTIVE', message: expect.stringContaining('paused') });

    await t.ctx.db.query("UPDATE webhook_endpoints SET disabled_reason = 'auto' WHERE id = $1", [c]);
    const auto = await t.call(key, 'POST', `/v1/webhooks/deliveries/${ping.deliveryId}/replay`);
    expect(auto.json().error).toMatchObject({ code: 'ENDPOINT_INACTIVE', message: expect.stringContaining('consecutive') });

    await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${c}`, { active: true });
    await t.call(key, 'DELETE', `/v1/webhooks/endpoints/${c}`);
    const deleted = await t.call(key, 'POST', `/v1/webhooks/deliveries/${ping.deliveryId}/replay`);
    expect(deleted.statusCode).toBe(409);
    expect(deleted.json().error.code).toBe('ENDPOINT_INACTIVE');
    expect((await list(`?endpointId=${c}`)).data).toHaveLength(count);
  });

  it('lets a viewer read deliveries but not replay them', async () => {
    const ws = t.demo.workspaces[0];
    const viewer = userOf(t.demo, 'viewer').token;
    expect((await t.call(viewer, 'GET', `/v1/workspaces/${ws.id}/webhooks/deliveries?limit=1`)).statusCode).toBe(200);
    expect((await t.call(viewer, 'GET', `/v1/webhooks/deliveries/${all[0].id}`, undefined, { 'service-workspace-id': ws.id })).statusCode).toBe(200);
    const replay = await t.call(viewer, 'POST', `/v1/workspaces/${ws.id}/webhooks/deliveries/${all[0].id}/replay`);
    expect(replay.statusCode).toBe(403);
    expect(replay.json().error.code).toBe('FORBIDDEN');
    const owner = userOf(t.demo, 'owner').token;
    expect((await t.call(owner, 'POST', `/v1/workspaces/${ws.id}/webhooks/deliveries/${all[0].id}/replay`)).statusCode).toBe(201);
  });

  it("answers 404 for another workspace's deliveries and ids of the wrong shape", async () => {
    const otherKey = t.demo.workspaces[1].apiKey;
    expect((await t.call(otherKey, 'GET', '/v1/webhooks/deliveries')).json().data).toEqual([]);
    expect((await t.call(otherKey, 'GET', `/v1/webhooks/deliveries?endpointId=${a}`)).json().data).toEqual([]);
    for (const id of [all[0].id, 'whd_nope', all[0].eventId]) {
      for (const [method, path] of [['GET', ''], ['POST', '/replay']] as const) {
        const res = await t.call(otherKey, method, `/v1/webhooks/deliveries/${id}${path}`);
        expect(res.statusCode, `${method} ${id}${path}`).toBe(404);
        expect(res.json().error.code).toBe('NOT_FOUND');
      }
    }
  });
});
