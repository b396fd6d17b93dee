import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startTestApp, type TestApp } from './helpers/app.js';
import { expectError, ok } from './helpers/expect.js';
import { EVENT_TYPES } from '../src/engine/log/catalog.js';

/** The event log: its bodies, its filters, and the stored body served byte for byte. */
describe('events', () => {
  const clock = new ManualClock(Date.parse('2026-07-01T08:00:00.000Z'));
  let t: TestApp;
  let key: string;
  let ws1: string;
  let hat: string;
  let scarf: string;
  /** What each change should have emitted, oldest first: [type, product id, time]. */
  const emitted: [string, string, string][] = [];

  const list = async (query = '') => ok(await t.call(key, 'GET', `/v1/events${query}`));
  async function change(method: 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown): Promise<string> {
    clock.advance(1000);
    const res = ok(await t.call(key, method, url, body), method === 'POST' ? 201 : 200);
    const type = { POST: 'product.created', PATCH: 'product.updated', DELETE: 'product.deleted' }[method];
    emitted.push([type, res.id, clock.now().toISOString()]);
    return res.id;
  }

  beforeAll(async () => {
    t = await startTestApp({ clock });
    key = t.demo.workspaces[0].apiKey;
    ws1 = t.demo.workspaces[0].id;
    hat = await change('POST', '/v1/products', { name: 'Hat' });
    scarf = await change('POST', '/v1/products', { name: 'Scarf', price: { amount: 900, currency: 'EUR' } });
    await change('PATCH', `/v1/products/${hat}`, { name: 'Top hat' });
    await change('PATCH', `/v1/products/${scarf}`, { active: false });
    await change('DELETE', `/v1/products/${scarf}`);
    // Something in the other workspace, which the first must never see.
    ok(await t.call(t.demo.workspaces[1].apiKey, 'POST', '/v1/products', { name: 'Elsewhere' }), 201);
  });
  afterAll(() => t.close());

  it('lists every change as one event, newest first, with id, type, created and subject only', async () => {
    const page = await list();
    expect(page.data.map((e: { type: string; subject: { id: string }; created: string }) => [e.type, e.subject.id, e.created])).toEqual([...emitted].reverse());
    for (const event of page.data) {
      expect(Object.keys(event)).toEqual(['id', 'type', 'created', 'subject']);
      expect(event.id).toMatch(/^evt_/);
      expect(event.subject).toEqual({ id: event.subject.id, type: 'product', url: `/v1/products/${event.subject.id}` });
    }
    expect(new Set(page.data.map((e: { id: string }) => e.id)).size).toBe(emitted.length);
  });

  it('filters by type, by subjectType and by subjectType with subjectId', async () => {
    const types = (page: { data: { type: string; subject: { id: string } }[] }) => page.data.map((e) => `${e.type} ${e.subject.id}`);
    expect(types(await list('?type=product.updated'))).toEqual([`product.updated ${scarf}`, `product.updated ${hat}`]);
    expect(types(await list('?type=product.deleted'))).toEqual([`product.deleted ${scarf}`]);
    expect((await list('?subjectType=product')).data).toHaveLength(emitted.length);
    expect(types(await list(`?subjectType=product&subjectId=${hat}`))).toEqual([`product.updated ${hat}`, `product.created ${hat}`]);
    expect(types(await list(`?type=product.created&subjectType=product&subjectId=${scarf}`))).toEqual([`product.created ${scarf}`]);
    for (const query of ['?subjectType=order', `?subjectType=order&subjectId=${hat}`]) {
      expect(await list(query)).toEqual({ data: [], nextPageUrl: null, previousPageUrl: null });
    }
    // A type outside the catalog is a typo, not an empty list: refused, naming the catalog.
    for (const query of ['?type=product.create', '?type=nope.created']) {
      const error = expectError(await t.call(key, 'GET', `/v1/events${query}`), 400, 'VALIDATION');
      expect(error.message).toBe(`Invalid query: query.type: must be one of: ${EVENT_TYPES.join(', ')}.`);
    }
  });

  it('refuses subjectId without subjectType, and unknown or repeated filters', async () => {
    const error = expectError(await t.call(key, 'GET', `/v1/events?subjectId=${hat}`), 400, 'VALIDATION');
    expect(error.message).toContain('subjectType');
    for (const query of ['?subject=product', '?type=', '?type=a&type=b', `?subjectType=product&subjectId=${hat}&subjectId=${scarf}`]) {
      expectError(await t.call(key, 'GET', `/v1/events${query}`), 400, 'VALIDATION');
    }
  });

  it('keeps the product.deleted event readable while the product is 404', async () => {
    expectError(await t.call(key, 'GET', `/v1/products/${scarf}`), 404, 'NOT_FOUND');
    const [deleted] = (await list(`?type=product.deleted&subjectType=product&subjectId=${scarf}`)).data;
    const event = ok(await t.call(key, 'GET', `/v1/events/${deleted.id}`));
    expect(event).toEqual({ id: deleted.id, type: 'product.deleted', created: emitted[4][2], subject: { id: scarf, type: 'product', url: `/v1/products/${scarf}` } });
    // A receiver that fetches subject.url gets the current state: gone.
    expectError(await t.call(key, 'GET', event.subject.url), 404, 'NOT_FOUND');
    ok(await t.call(key, 'GET', `/v1/workspaces/${ws1}/events/${deleted.id}`));
  });

  it('serves the stored body byte for byte, in the list and on retrieve', async () => {
    const listed = await t.call(key, 'GET', '/v1/events?limit=100');
    const stored = await t.ctx.db.query<{ id: string; body: string }>('SELECT id, body FROM events WHERE workspace_id = $1', [ws1]);
    expect(stored).toHaveLength(emitted.length);
    for (const { id, body } of stored) {
      const retrieved = await t.call(key, 'GET', `/v1/events/${id}`);
      expect(retrieved.headers['content-type']).toMatch(/^application\/json/);
      expect(retrieved.rawPayload.equals(Buffer.from(body, 'utf8'))).toBe(true);
      expect(listed.rawPayload.includes(Buffer.from(`[${body},`)) || listed.rawPayload.includes(Buffer.from(`,${body}`))).toBe(true);
      expect(JSON.parse(body).id).toBe(id);
    }
    // The list is the stored bodies in order, inside the envelope, with nothing re-serialised.
    const bodies = new Map(stored.map((r) => [r.id, r.body]));
    const order = JSON.parse(listed.body).data.map((e: { id: string }) => e.id);
    expect(listed.body).toBe(`{"data":[${order.map((id: string) => bodies.get(id)).join(',')}],"nextPageUrl":null,"previousPageUrl":null}`);
  });

  it('answers 404 for an event id of the wrong shape or of another workspace', async () => {
    const other = ok(await t.call(t.demo.workspaces[1].apiKey, 'GET', '/v1/events')).data[0].id;
    const [own] = (await list()).data;
    for (const id of [other, hat, 'evt_', 'evt_x', own.id.toUpperCase(), own.id.slice(0, -1), `${own.id}0`, 'evt_01aaaaaaaaaaaaaaaaaaaaaaaa', '%20']) {
      expectError(await t.call(key, 'GET', `/v1/events/${id}`), 404, 'NOT_FOUND');
    }
    ok(await t.call(t.demo.workspaces[1].apiKey, 'GET', `/v1/events/${other}`));
  });

  it('leaves no product, event or delivery behind a change whose transaction rolls back', async () => {
    const owner = t.demo.users.find((u) => u.role === 'owner')!.token;
    ok(await t.call(owner, 'POST', `/v1/workspaces/${ws1}/webhooks/endpoints`, { url: 'https://hooks.example.com/in', subscribedEvents: ['product.*'] }), 201);
    const count = async () => {
      const [row] = await t.ctx.db.query<{ products: number; events: number; deliveries: number }>(
        `SELECT (SELECT count(*)::int FROM products WHERE workspace_id = $1) AS products,
                (SELECT count(*)::int FROM events WHERE workspace_id = $1) AS events,
                (SELECT count(*)::int FROM webhook_deliveries WHERE workspace_id = $1) AS deliveries`,
        [ws1],
      );
      return row;
    };
    const before = await count();
    // The last write of the change (the delivery row) fails, after the product and its event were written.
    await t.ctx.db.query("ALTER TABLE webhook_deliveries ADD CONSTRAINT refuse_created CHECK (event_type <> 'product.created')");
    try {
      expectError(await t.call(key, 'POST', '/v1/products', { name: 'Doomed' }), 500, 'INTERNAL');
    } finally {
      await t.ctx.db.query('ALTER TABLE webhook_deliveries DROP CONSTRAINT refuse_created');
    }
    expect(await count()).toEqual(before);
    expect((await list('?type=product.created')).data).toHaveLength(2);

    ok(await t.call(key, 'POST', '/v1/products', { name: 'Fine' }), 201);
    expect(await count()).toEqual({ products: before.products + 1, events: before.events + 1, deliveries: before.deliveries + 1 });
  });
});
