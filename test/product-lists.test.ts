import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.js';

/** Text that JSON writers escape differently if they can: quotes, backslashes, control characters, line separators, emoji. */
const awkwardText = (maxLength: number) =>
  fc.oneof(
    fc.string({ unit: 'grapheme', minLength: 1, maxLength }),
    fc.string({ unit: fc.constantFrom('"', '\\', '\n', '\t', '\u0001', '\u001f', '\u007f', '\u2028', 'é', '😀', '/', 'a', '</'), minLength: 1, maxLength }),
  );

const product = fc.record(
  {
    name: awkwardText(40),
    description: fc.option(awkwardText(60), { nil: null }),
    price: fc.option(fc.record({ amount: fc.oneof(fc.constantFrom(0, 999_999_999_999), fc.integer({ min: 0, max: 999_999_999_999 })), currency: fc.constantFrom('USD', 'EUR', 'JPY') }), { nil: null }),
    active: fc.boolean(),
    // Integer-like keys come first in a JavaScript object, and not in a jsonb one.
    metadata: fc.dictionary(fc.oneof(awkwardText(10), fc.nat({ max: 5000 }).map(String)), awkwardText(20), { maxKeys: 6 }),
  },
  { requiredKeys: ['name'] },
);

/**
 * Lists render each product in the database (products/store.ts, listProductsJson); a product
 * alone goes through its view and the response schema. Both must give the same bytes.
 */
describe('product lists', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await startTestApp({ config: { rateLimitApiKey: 1_000_000 } });
    key = t.demo.workspaces[0].apiKey;
  });
  afterAll(() => t.close());

  it('answer each product with the same bytes as retrieving it', async () => {
    const created: string[] = [];
    await fc.assert(
      fc.asyncProperty(product, async (input) => {
        const res = await t.call(key, 'POST', '/v1/products', input);
        expect(res.statusCode).toBe(201);
        created.push(res.json().id);
      }),
      { numRuns: 60 },
    );
    // Some of them changed since, so their two times differ.
    for (const id of created.slice(0, 10)) {
      expect((await t.call(key, 'PATCH', `/v1/products/${id}`, { metadata: { '7': 'seven', b: 'bee', '10': 'ten', a: '"' } })).statusCode).toBe(200);
    }

    const listed: string[] = [];
    for (let url: string | null = '/v1/products?limit=7'; url; ) {
      const res = await t.call(key, 'GET', url);
      expect(res.statusCode).toBe(200);
      const page = res.json();
      // Each item's own bytes: the page text cut at the items' boundaries, which parsing confirms.
      const items = splitItems(res.body.slice('{"data":['.length, res.body.indexOf('],"nextPageUrl":')), page.data.length);
      expect(items.map((item) => JSON.parse(item))).toEqual(page.data);
      listed.push(...items);
      url = page.nextPageUrl && page.nextPageUrl.slice(page.nextPageUrl.indexOf('/v1/'));
    }
    expect(listed).toHaveLength(created.length);
    for (const item of listed) {
      const { id } = JSON.parse(item);
      const single = await t.call(key, 'GET', `/v1/products/${id}`);
      expect(item).toBe(single.body);
    }
  });
});

/** The items of a JSON array's inside, at the commas between top-level values. */
function splitItems(text: string, count: number): string[] {
  const items: string[] = [];
  let depth = 0;
  let inString = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
    else if (c === ',' && depth === 0) {
      items.push(text.slice(start, i));
      start = i + 1;
    }
  }
  if (text.length > 0) items.push(text.slice(start));
  expect(items).toHaveLength(count);
  return items;
}
