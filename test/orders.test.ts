import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, pathOf, startTestApp, userOf, type TestApp } from './helpers/app.js';
import { expectError, ok } from './helpers/expect.js';
import { snapshot } from './helpers/security.js';

type Order = Record<string, any> & { id: string; status: string; createdAt: string };

const ORDER_FIELDS = [
  'id', 'status', 'currency', 'amountTotal', 'customerEmail', 'metadata', 'createdAt',
  'updatedAt', 'paidAt', 'fulfilledAt', 'canceledAt', 'refundedAt', 'lineItems',
];

/** Every action, the status it is allowed from, the status it leads to and its event (docs/orders.md). */
const ACTIONS: Record<string, { from: string[]; to: string; at: string }> = {
  pay: { from: ['pending'], to: 'paid', at: 'paidAt' },
  fulfill: { from: ['paid'], to: 'fulfilled', at: 'fulfilledAt' },
  cancel: { from: ['pending'], to: 'canceled', at: 'canceledAt' },
  refund: { from: ['paid', 'fulfilled'], to: 'refunded', at: 'refundedAt' },
};
/** A way to each status from pending. */
const PATHS: Record<string, string[]> = { pending: [], paid: ['pay'], fulfilled: ['pay', 'fulfill'], canceled: ['cancel'], refunded: ['pay', 'refund'] };

describe('orders', () => {
  let t: TestApp;
  let key: string;
  let ws: string;
  const clock = new ManualClock(Date.parse('2026-03-01T10:00:00.000Z'));
  const products: Record<string, string> = {};

  const post = (url: string, body?: unknown, token = key) => t.call(token, 'POST', url, body);
  const create = async (body: unknown, token = key): Promise<Order> => ok(await post('/v1/orders', body, token), 201);
  const act = (id: string, action: string, token = key) => post(`/v1/orders/${id}/${action}`, undefined, token);
  const eventsOf = async (id: string) =>
    ok(await t.call(key, 'GET', `/v1/events?subjectType=order&subjectId=${id}&limit=100`)).data.map((e: { type: string }) => e.type) as string[];
  const product = async (name: string, body: Record<string, unknown>, token = key) => ok(await post('/v1/products', { name, ...body }, token), 201).id as string;

  beforeAll(async () => {
    t = await startTestApp({ clock, config: { rateLimitApiKey: 1_000_000, rateLimitPat: 1_000_000 } });
    key = t.demo.workspaces[0].apiKey;
    ws = t.demo.workspaces[0].id;
    products.hat = await product('Hat', { price: { amount: 1299, currency: 'EUR' } });
    products.scarf = await product('Scarf', { price: { amount: 2500, currency: 'EUR' } });
    products.dollar = await product('Cap', { price: { amount: 900, currency: 'USD' } });
    products.unpriced = await product('Gift card', {});
    products.inactive = await product('Old hat', { price: { amount: 100, currency: 'EUR' }, active: false });
    products.deleted = await product('Gone hat', { price: { amount: 100, currency: 'EUR' } });
    ok(await t.call(key, 'DELETE', `/v1/products/${products.deleted}`));
    products.otherWorkspace = await product('Foreign hat', { price: { amount: 100, currency: 'EUR' } }, t.demo.workspaces[1].apiKey);
    products.huge = await product('Yacht', { price: { amount: 999_999_999_999, currency: 'EUR' } });
  });
  afterAll(() => t.close());

  it('creates an order that snapshots each product, with its amounts in minor units and an order.created event', async () => {
    clock.advance(1000);
    const order = await create({ lineItems: [{ productId: products.hat, quantity: 2 }, { productId: products.scarf, quantity: 1 }], customerEmail: 'ada@example.com', metadata: { ref: 'A-1' } });
    expect(Object.keys(order)).toEqual(ORDER_FIELDS);
    expect(order.id).toMatch(/^ord_[0-9a-z]{26}$/);
    expect(order).toMatchObject({
      status: 'pending',
      currency: 'EUR',
      amountTotal: 2 * 1299 + 2500,
      customerEmail: 'ada@example.com',
      metadata: { ref: 'A-1' },
      createdAt: clock.now().toISOString(),
      updatedAt: clock.now().toISOString(),
      paidAt: null,
      fulfilledAt: null,
      canceledAt: null,
      refundedAt: null,
    });
    expect(order.lineItems).toEqual([
      { productId: products.hat, name: 'Hat', unitAmount: 1299, quantity: 2, amount: 2598 },
      { productId: products.scarf, name: 'Scarf', unitAmount: 2500, quantity: 1, amount: 2500 },
    ]);
    expect(ok(await t.call(key, 'GET', `/v1/orders/${order.id}`))).toEqual(order);
    expect(ok(await t.call(key, 'GET', `/v1/workspaces/${ws}/orders/${order.id}`))).toEqual(order);

    const events = ok(await t.call(key, 'GET', `/v1/events?subjectType=order&subjectId=${order.id}`)).data;
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'order.created', created: order.createdAt, subject: { id: order.id, type: 'order', url: `/v1/orders/${order.id}` } });
  });

  it('defaults customerEmail to null and metadata to {}, and keeps repeated products as separate lines', async () => {
    const order = await create({ lineItems: [{ productId: products.hat, quantity: 1 }, { productId: products.hat, quantity: 3 }] });
    expect(order).toMatchObject({ customerEmail: null, metadata: {}, amountTotal: 4 * 1299 });
    expect(order.lineItems.map((l: { quantity: number }) => l.quantity)).toEqual([1, 3]);
  });

  it('refuses line items that cannot be ordered with a 400 naming the line item, and writes nothing', async () => {
    const { hat } = products;
    const cases: { lines: { productId: string; quantity: number }[]; path: string; says: string }[] = [
      { lines: [{ productId: hat, quantity: 1 }, { productId: hat, quantity: 1 }, { productId: 'prd_01kdvdna00hbt6qfa3na92fsmh', quantity: 1 }], path: 'lineItems[2].productId', says: 'no product' },
      { lines: [{ productId: products.otherWorkspace, quantity: 1 }], path: 'lineItems[0].productId', says: 'no product' },
      { lines: [{ productId: hat, quantity: 1 }, { productId: products.deleted, quantity: 1 }], path: 'lineItems[1].productId', says: 'no product' },
      { lines: [{ productId: 'not an id', quantity: 1 }], path: 'lineItems[0].productId', says: 'no product' },
      { lines: [{ productId: products.inactive, quantity: 1 }], path: 'lineItems[0].productId', says: 'not active' },
      { lines: [{ productId: products.unpriced, quantity: 1 }], path: 'lineItems[0].productId', says: 'no price' },
      { lines: [{ productId: hat, quantity: 1 }, { productId: products.dollar, quantity: 1 }], path: 'lineItems[1].productId', says: 'priced in USD' },
      { lines: [{ productId: products.huge, quantity: 10_000 }], path: 'lineItems[0].quantity', says: 'over the maximum' },
    ];
    const before = await snapshot(t.ctx);
    for (const { lines, path, says } of cases) {
      const error = expectError(await post('/v1/orders', { lineItems: lines }), 400, 'VALIDATION');
      expect(error.message, JSON.stringify(lines)).toContain(path);
      expect(error.message).toContain(says);
      const index = path.match(/\[(\d+)\]/)![1];
      expect(error.details![0].path).toBe(`body.lineItems.${index}.${path.split('.').pop()}`);
    }
    // Every refused line is named, not only the first.
    const several = expectError(await post('/v1/orders', { lineItems: [{ productId: products.inactive, quantity: 1 }, { productId: hat, quantity: 1 }, { productId: products.unpriced, quantity: 1 }] }), 400, 'VALIDATION');
    expect(several.details!.map((d) => d.path)).toEqual(['body.lineItems.0.productId', 'body.lineItems.2.productId']);
    // A total past what a JSON number holds exactly.
    const total = expectError(await post('/v1/orders', { lineItems: Array.from({ length: 100 }, () => ({ productId: products.huge, quantity: 100 })) }), 400, 'VALIDATION');
    expect(total.details![0].path).toBe('body.lineItems');
    expect(await snapshot(t.ctx)).toEqual(before);
  });

  it('refuses malformed bodies with a 400 naming the field', async () => {
    const line = { productId: products.hat, quantity: 1 };
    const cases: [unknown, string][] = [
      [{}, 'body.lineItems'],
      [{ lineItems: [] }, 'body.lineItems'],
      [{ lineItems: Array.from({ length: 101 }, () => line) }, 'body.lineItems'],
      [{ lineItems: [{ ...line, quantity: 0 }] }, 'body.lineItems.0.quantity'],
      [{ lineItems: [line, { ...line, quantity: -1 }] }, 'body.lineItems.1.quantity'],
      [{ lineItems: [{ ...line, quantity: 1.5 }] }, 'body.lineItems.0.quantity'],
      [{ lineItems: [{ ...line, quantity: 10_001 }] }, 'body.lineItems.0.quantity'],
      [{ lineItems: [{ ...line, quantity: '1' }] }, 'body.lineItems.0.quantity'],
      [{ lineItems: [{ productId: products.hat }] }, 'body.lineItems.0.quantity'],
      [{ lineItems: [{ ...line, price: 1 }] }, 'body.lineItems.0.price'],
      [{ lineItems: [line], customerEmail: 'not an address' }, 'body.customerEmail'],
      [{ lineItems: [line], metadata: { a: 1 } }, 'body.metadata.a'],
      [{ lineItems: [line], status: 'paid' }, 'body.status'],
    ];
    const before = await snapshot(t.ctx);
    for (const [body, path] of cases) {
      const error = expectError(await post('/v1/orders', body), 400, 'VALIDATION');
      expect(error.details?.[0].path, JSON.stringify(body).slice(0, 100)).toBe(path);
    }
    expect(await snapshot(t.ctx)).toEqual(before);
  });

  it('changes no order when its products change or are deleted later', async () => {
    const name = await product('Mutable hat', { price: { amount: 700, currency: 'EUR' } });
    const order = await create({ lineItems: [{ productId: name, quantity: 2 }] });
    ok(await t.call(key, 'PATCH', `/v1/products/${name}`, { name: 'Renamed hat', price: { amount: 1, currency: 'USD' } }));
    expect(ok(await t.call(key, 'GET', `/v1/orders/${order.id}`))).toEqual(order);
    ok(await t.call(key, 'DELETE', `/v1/products/${name}`));
    expect(ok(await t.call(key, 'GET', `/v1/orders/${order.id}`))).toEqual(order);
    // The product is gone for new orders, though.
    expectError(await post('/v1/orders', { lineItems: [{ productId: name, quantity: 1 }] }), 400, 'VALIDATION');
  });

  it('updates metadata and customerEmail in any status, emitting order.updated', async () => {
    const order = await create({ lineItems: [{ productId: products.hat, quantity: 1 }], metadata: { a: '1' } });
    clock.advance(1000);
    const updated = ok(await t.call(key, 'PATCH', `/v1/orders/${order.id}`, { customerEmail: 'bo@example.com', metadata: { b: '2' } }));
    expect(updated).toEqual({ ...order, customerEmail: 'bo@example.com', metadata: { b: '2' }, updatedAt: clock.now().toISOString() });
    clock.advance(1000);
    ok(await act(order.id, 'cancel'));
    clock.advance(1000);
    const cleared = ok(await t.call(key, 'PATCH', `/v1/workspaces/${ws}/orders/${order.id}`, { customerEmail: null }));
    expect(cleared).toMatchObject({ status: 'canceled', customerEmail: null, metadata: { b: '2' } });
    expect(await eventsOf(order.id)).toEqual(['order.updated', 'order.canceled', 'order.updated', 'order.created']);

    const before = await snapshot(t.ctx);
    for (const body of [{}, { status: 'paid' }, { customerEmail: 'x' }, { lineItems: [] }, { metadata: null }]) {
      expectError(await t.call(key, 'PATCH', `/v1/orders/${order.id}`, body), 400, 'VALIDATION');
    }
    expectError(await t.call(key, 'PATCH', '/v1/orders/ord_01kdvdna00hbt6qfa3na92fsmh', { metadata: {} }), 404, 'NOT_FOUND');
    expect(await snapshot(t.ctx)).toEqual(before);
  });

  it('moves through every allowed transition, stamping its time and emitting its event', async () => {
    const order = await create({ lineItems: [{ productId: products.scarf, quantity: 1 }] });
    const times: Record<string, string> = {};
    for (const action of ['pay', 'fulfill', 'refund']) {
      clock.advance(1000);
      const moved = ok(await act(order.id, action));
      times[ACTIONS[action].at] = clock.now().toISOString();
      expect(moved).toMatchObject({ ...times, status: ACTIONS[action].to, updatedAt: clock.now().toISOString(), lineItems: order.lineItems });
    }
    expect(ok(await t.call(key, 'GET', `/v1/orders/${order.id}`))).toMatchObject({ status: 'refunded', canceledAt: null, ...times });
    expect(await eventsOf(order.id)).toEqual(['order.refunded', 'order.fulfilled', 'order.paid', 'order.created']);

    const refundedFromPaid = await create({ lineItems: [{ productId: products.scarf, quantity: 1 }] });
    ok(await act(refundedFromPaid.id, 'pay'));
    expect(ok(await t.call(key, 'POST', `/v1/workspaces/${ws}/orders/${refundedFromPaid.id}/refund`))).toMatchObject({ status: 'refunded', fulfilledAt: null });
  });

  it('refuses every action its status does not allow with 409 INVALID_STATE naming the status and the allowed actions', async () => {
    const allowed: Record<string, string> = {
      pending: 'the actions allowed from pending are: pay, cancel',
      paid: 'the actions allowed from paid are: fulfill, refund',
      fulfilled: 'the actions allowed from fulfilled are: refund',
      canceled: 'no action is allowed from canceled',
      refunded: 'no action is allowed from refunded',
    };
    for (const [status, path] of Object.entries(PATHS)) {
      const order = await create({ lineItems: [{ productId: products.hat, quantity: 1 }] });
      for (const action of path) ok(await act(order.id, action));
      const before = await snapshot(t.ctx);
      for (const [action, { from }] of Object.entries(ACTIONS)) {
        if (from.includes(status)) continue;
        const error = expectError(await act(order.id, action), 409, 'INVALID_STATE');
        expect(error.message).toBe(`Cannot ${action} order ${order.id}: its status is ${status}; ${allowed[status]}.`);
      }
      expect(await snapshot(t.ctx), status).toEqual(before);
    }
  });

  it('answers 404 for unknown and malformed order ids on every order route', async () => {
    for (const id of ['ord_01kdvdna00hbt6qfa3na92fsmh', 'prd_01kdvdna00hbt6qfa3na92fsmh', 'nope']) {
      expectError(await t.call(key, 'GET', `/v1/orders/${id}`), 404, 'NOT_FOUND');
      for (const action of Object.keys(ACTIONS)) expectError(await act(id, action), 404, 'NOT_FOUND');
    }
  });

  it('lists orders newest first, with lineItems only when expanded, filtered by status and creation time', async () => {
    const { data: all } = ok(await t.call(key, 'GET', '/v1/orders?limit=100'));
    expect(all.length).toBeGreaterThanOrEqual(10);
    const times = all.map((o: Order) => o.createdAt + o.id);
    expect([...times].sort().reverse()).toEqual(times);
    expect(all.every((o: Order) => !('lineItems' in o))).toBe(true);
    expect(Object.keys(all[0])).toEqual(ORDER_FIELDS.filter((f) => f !== 'lineItems'));

    const expanded = ok(await t.call(key, 'GET', `/v1/workspaces/${ws}/orders?limit=100&expand=lineItems`)).data;
    for (const order of expanded) expect(order).toEqual(ok(await t.call(key, 'GET', `/v1/orders/${order.id}`)));

    for (const status of ['pending', 'paid', 'fulfilled', 'canceled', 'refunded']) {
      const filtered = ok(await t.call(key, 'GET', `/v1/orders?limit=100&status=${status}`)).data;
      expect(filtered.map((o: Order) => o.id)).toEqual(all.filter((o: Order) => o.status === status).map((o: Order) => o.id));
    }
    const middle = all[Math.floor(all.length / 2)].createdAt;
    const gte = ok(await t.call(key, 'GET', `/v1/orders?limit=100&createdGte=${middle}`)).data;
    expect(gte.map((o: Order) => o.id)).toEqual(all.filter((o: Order) => o.createdAt >= middle).map((o: Order) => o.id));
    const lte = ok(await t.call(key, 'GET', `/v1/orders?limit=100&createdLte=${encodeURIComponent(middle.replace('Z', '+00:00'))}`)).data;
    expect(lte.map((o: Order) => o.id)).toEqual(all.filter((o: Order) => o.createdAt <= middle).map((o: Order) => o.id));
  });

  it('pages through a filtered, expanded list and binds the filters to the cursor', async () => {
    const pending = ok(await t.call(key, 'GET', '/v1/orders?limit=100&status=pending')).data.map((o: Order) => o.id);
    const seen: string[] = [];
    let url: string | null = '/v1/orders?limit=2&status=pending&expand=lineItems';
    let last = '';
    while (url) {
      const page: { data: Order[]; nextPageUrl: string | null } = ok(await t.call(key, 'GET', url));
      expect(page.data.every((o) => o.status === 'pending' && Array.isArray(o.lineItems))).toBe(true);
      seen.push(...page.data.map((o) => o.id));
      last = url;
      url = page.nextPageUrl && pathOf(page.nextPageUrl);
      if (url) expect(url).toContain('expand=lineItems');
    }
    expect(seen).toEqual(pending);
    const token = new URL(`http://x${last}`).searchParams.get('page');
    if (token) expectError(await t.call(key, 'GET', `/v1/orders?limit=2&status=paid&page=${token}`), 400, 'VALIDATION');
  });

  it('refuses bad list queries with a 400', async () => {
    for (const query of ['status=shipped', 'expand=products', 'expand=lineItems.product', 'createdGte=yesterday', 'createdLte=2026-13-01T00:00:00Z', 'limit=101', 'colour=red']) {
      expectError(await t.call(key, 'GET', `/v1/orders?${query}`), 400, 'VALIDATION');
    }
    const error = expectError(await t.call(key, 'GET', '/v1/orders?expand=nope'), 400, 'VALIDATION');
    expect(error.message).toContain('lineItems');
  });

  it('lets a Viewer read orders but not write them', async () => {
    const viewer = userOf(t.demo, 'viewer').token;
    const admin = userOf(t.demo, 'admin').token;
    const order = await create({ lineItems: [{ productId: products.hat, quantity: 1 }] });
    expect(ok(await t.call(viewer, 'GET', `/v1/workspaces/${ws}/orders/${order.id}`)).id).toBe(order.id);
    expect(ok(await t.call(viewer, 'GET', '/v1/orders', undefined, { 'service-workspace-id': ws })).data.length).toBeGreaterThan(0);
    const before = await snapshot(t.ctx);
    const refusals = [
      await t.call(viewer, 'POST', `/v1/workspaces/${ws}/orders`, { lineItems: [{ productId: products.hat, quantity: 1 }] }),
      await t.call(viewer, 'PATCH', `/v1/workspaces/${ws}/orders/${order.id}`, { metadata: {} }),
      ...(await Promise.all(Object.keys(ACTIONS).map((a) => t.call(viewer, 'POST', `/v1/workspaces/${ws}/orders/${order.id}/${a}`)))),
    ];
    for (const res of refusals) expect(expectError(res, 403, 'FORBIDDEN').message).toContain('workspace:orders:write');
    expect(await snapshot(t.ctx)).toEqual(before);
    ok(await t.call(admin, 'POST', `/v1/workspaces/${ws}/orders/${order.id}/pay`));
  });

  it("answers 404 for another workspace's order and lists none of them", async () => {
    const order = await create({ lineItems: [{ productId: products.hat, quantity: 1 }] });
    const other = t.demo.workspaces[1].apiKey;
    const before = await snapshot(t.ctx);
    expectError(await t.call(other, 'GET', `/v1/orders/${order.id}`), 404, 'NOT_FOUND');
    expectError(await t.call(other, 'PATCH', `/v1/orders/${order.id}`, { metadata: {} }), 404, 'NOT_FOUND');
    for (const action of Object.keys(ACTIONS)) expectError(await act(order.id, action, other), 404, 'NOT_FOUND');
    expect(ok(await t.call(other, 'GET', '/v1/orders?expand=lineItems')).data).toEqual([]);
    expect(await snapshot(t.ctx)).toEqual(before);
  });
});
