import { expect } from 'vitest';
import { ManualClock, startTestApp, type TestApp } from './app.js';

export type Delivery = Record<string, unknown> & { id: string; eventId: string; createdAt: string };

/**
 * Reads and writes of the delivery list tests on the app `app()` with `apiKey()` (functions, as a
 * beforeAll starts the app): `list` a page of GET /v1/webhooks/deliveries with `query`, `ids` the ids
 * of its rows, `endpoint` a new endpoint for `subscribedEvents`, returning its id.
 */
export function deliveryCalls(app: () => TestApp, apiKey: () => string) {
  const list = async (query: string) => {
    const res = await app().call(apiKey(), 'GET', `/v1/webhooks/deliveries${query}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { data: Delivery[]; nextPageUrl: string | null; previousPageUrl: string | null };
  };
  const ids = (rows: Delivery[]) => rows.map((d) => d.id);
  const endpoint = async (subscribedEvents: string[]) =>
    (await app().call(apiKey(), 'POST', '/v1/webhooks/endpoints', { url: 'https://hooks.example.com/in', subscribedEvents })).json().id as string;
  return { list, ids, endpoint };
}

/**
 * Two endpoints see three products change, one second apart on `clock`:
 * A (product.*) gets 3 created + 1 updated, B (product.created) gets 3 created.
 * Returns the app, the first demo workspace's API key, both endpoints and every delivery, newest first.
 */
export async function startDeliveries(clock: ManualClock): Promise<{ t: TestApp; key: string; a: string; b: string; all: Delivery[] }> {
  const t = await startTestApp({ clock, config: { rateLimitApiKey: 1_000_000, rateLimitPat: 1_000_000 } });
  const key = t.demo.workspaces[0].apiKey;
  const { list, endpoint } = deliveryCalls(() => t, () => key);
  const a = await endpoint(['product.*']);
  const b = await endpoint(['product.created']);
  let last = '';
  for (const name of ['one', 'two', 'three']) {
    clock.advance(1000);
    last = (await t.call(key, 'POST', '/v1/products', { name })).json().id;
  }
  clock.advance(1000);
  await t.call(key, 'PATCH', `/v1/products/${last}`, { name: 'three!' });
  const all = (await list('?limit=100')).data;
  return { t, key, a, b, all };
}
