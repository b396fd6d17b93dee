import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.js';
import { ok } from './helpers/expect.js';

describe('racing actions on one order', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ config: { rateLimitApiKey: 1_000_000 } });
  });
  afterAll(() => t.close());

  it('lets exactly one of pay and cancel succeed, with exactly one event, every time', async () => {
    const key = t.demo.workspaces[0].apiKey;
    const productId = ok(await t.call(key, 'POST', '/v1/products', { name: 'Race hat', price: { amount: 500, currency: 'EUR' } }), 201).id;
    const rounds = 25;
    const orders: string[] = [];
    for (let i = 0; i < rounds; i++) orders.push(ok(await t.call(key, 'POST', '/v1/orders', { lineItems: [{ productId, quantity: 1 }] }), 201).id);

    await Promise.all(
      orders.map(async (id) => {
        const [pay, cancel] = await Promise.all([t.call(key, 'POST', `/v1/orders/${id}/pay`), t.call(key, 'POST', `/v1/orders/${id}/cancel`)]);
        const statuses = [pay.statusCode, cancel.statusCode].sort();
        expect(statuses, `${pay.body} ${cancel.body}`).toEqual([200, 409]);
        const winner = pay.statusCode === 200 ? pay : cancel;
        const loser = pay.statusCode === 200 ? cancel : pay;
        expect(loser.json().error.message).toContain(`its status is ${winner.json().status}`);
      }),
    );

    const rows = await t.ctx.db.query<{ subject_id: string; type: string }>(
      "SELECT subject_id, type FROM events WHERE subject_type = 'order' AND type IN ('order.paid', 'order.canceled')",
    );
    expect(rows).toHaveLength(rounds);
    expect(new Set(rows.map((r) => r.subject_id))).toEqual(new Set(orders));
    const final = await t.ctx.db.query<{ id: string; status: string; paid_at: Date | null; canceled_at: Date | null }>(
      'SELECT id, status, paid_at, canceled_at FROM orders WHERE id = ANY($1::text[])',
      [orders],
    );
    for (const row of final) {
      const event = rows.find((r) => r.subject_id === row.id)!;
      expect(event.type).toBe(row.status === 'paid' ? 'order.paid' : 'order.canceled');
      expect(row.paid_at === null).toBe(row.status !== 'paid');
      expect(row.canceled_at === null).toBe(row.status !== 'canceled');
    }
    // Fifty requests racing in pairs on the embedded engine, which runs them one at a time.
  }, 90_000);
});
