import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.js';
import { addEndpoint } from './helpers/delivery.js';

// Creations arriving together are written as one statement (src/products/create-batch.ts).
describe('product creations written together', () => {
  let t: TestApp;
  let key: string;
  const batches: number[] = [];
  beforeAll(async () => {
    t = await startTestApp({ config: { rateLimitApiKey: 1_000_000 } });
    key = t.demo.workspaces[0].apiKey;
    const query = t.ctx.db.query.bind(t.ctx.db);
    t.ctx.db.query = (async (sql: string, params?: unknown[]) => {
      if (sql.includes('jsonb_to_recordset') && sql.includes('INSERT INTO products')) batches.push(JSON.parse(params![0] as string).length);
      return query(sql, params);
    }) as typeof t.ctx.db.query;
  });
  afterAll(() => t.close());

  it('gives each of many concurrent creations its own product, event and deliveries', async () => {
    const a = await addEndpoint(t, 'https://a.example.com/hook');
    const b = await addEndpoint(t, 'https://b.example.com/hook', ['product.created']);
    await addEndpoint(t, 'https://c.example.com/hook', ['product.updated']);
    await addEndpoint(t, 'https://other.example.com/hook', ['product.*'], 1);
    batches.length = 0;

    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        t.call(key, 'POST', '/v1/products', { name: `Batch ${i}`, price: i % 2 ? { amount: 100 + i, currency: 'EUR' } : undefined, metadata: { n: String(i) } }),
      ),
    );
    expect(answers.map((r) => r.statusCode)).toEqual(Array(40).fill(201));
    expect(batches.reduce((sum, n) => sum + n, 0)).toBe(40);
    expect(batches.length).toBeLessThan(40);

    const products = answers.map((r) => r.json());
    expect(new Set(products.map((p) => p.id)).size).toBe(40);
    for (const [i, product] of products.entries()) {
      expect(product).toMatchObject({ name: `Batch ${i}`, metadata: { n: String(i) }, price: i % 2 ? { amount: 100 + i, currency: 'EUR' } : null });
      expect((await t.call(key, 'GET', `/v1/products/${product.id}`)).json()).toEqual(product);
      const events = (await t.call(key, 'GET', `/v1/events?subjectType=product&subjectId=${product.id}`)).json().data;
      expect(events.map((e: { type: string }) => e.type)).toEqual(['product.created']);
      expect(events[0].created).toBe(product.createdAt);
      const deliveries = await t.ctx.db.query<{ endpoint_id: string; status: string; event_type: string }>(
        'SELECT endpoint_id, status, event_type FROM webhook_deliveries WHERE event_id = $1 ORDER BY endpoint_id',
        [events[0].id],
      );
      expect(deliveries).toEqual(
        [a.id, b.id].sort().map((endpoint_id) => ({ endpoint_id, status: 'pending', event_type: 'product.created' })),
      );
    }
  });

  it('keeps awkward text, metadata and event bodies verbatim when written together', async () => {
    const awkward = ['plain', '', 'say "hi"', 'back\\slash \\"', '{a,b}', 'NULL', 'null', '  spaced  ', "it's", 'tab\tnew\nline', 'emoji 🧪 日本', '\u2028'];
    batches.length = 0;
    const answers = await Promise.all(
      awkward.map((text, i) =>
        t.call(key, 'POST', '/v1/products', {
          name: `n${i} ${text}`,
          description: i % 3 === 0 ? null : text,
          metadata: { text, [`k${i}`]: `v ${text}`, n: String(i) },
        }),
      ),
    );
    expect(answers.map((r) => r.statusCode)).toEqual(awkward.map(() => 201));
    expect(batches.some((n) => n > 1)).toBe(true);
    for (const [i, text] of awkward.entries()) {
      const product = answers[i].json();
      expect(product).toMatchObject({ name: `n${i} ${text}`, description: i % 3 === 0 ? null : text, metadata: { text, [`k${i}`]: `v ${text}`, n: String(i) } });
      expect((await t.call(key, 'GET', `/v1/products/${product.id}`)).json()).toEqual(product);
      const [event] = (await t.call(key, 'GET', `/v1/events?subjectType=product&subjectId=${product.id}`)).json().data;
      expect(event).toMatchObject({ type: 'product.created', created: product.createdAt, subject: { id: product.id, type: 'product' } });
    }
  });

  it('writes the others when one creation of a batch fails on its own', async () => {
    // A real trigger that refuses one name stands for a fault only the database can find.
    await t.ctx.db.query(`CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.name = 'Boom' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$`);
    await t.ctx.db.query('CREATE TRIGGER refuse_boom BEFORE INSERT ON products FOR EACH ROW EXECUTE FUNCTION refuse_boom()');
    try {
      batches.length = 0;
      const names = Array.from({ length: 12 }, (_, i) => (i === 5 ? 'Boom' : `Fine ${i}`));
      const answers = await Promise.all(names.map((name) => t.call(key, 'POST', '/v1/products', { name })));
      expect(answers.map((r) => r.statusCode)).toEqual(names.map((n) => (n === 'Boom' ? 500 : 201)));
      expect(batches.some((n) => n > 1)).toBe(true);
      const [{ n: boom }] = await t.ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM products WHERE name = 'Boom'`);
      expect(boom).toBe(0);
      const [{ n: events }] = await t.ctx.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM events e JOIN products p ON p.id = e.subject_id WHERE p.name LIKE 'Fine %'`,
      );
      expect(events).toBe(11);
    } finally {
      await t.ctx.db.query('DROP TRIGGER refuse_boom ON products');
    }
  });
});
