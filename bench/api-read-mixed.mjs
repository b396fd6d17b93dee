// Scenario: API reads as real clients make them. 100 workspaces, one API key each, 200 products and
// 20 orders each (some paid). Every request picks at random a workspace's key and one of: a page of
// products or orders (10, 20 or 50 per page, first to third page by the API's own nextPageUrl),
// orders filtered by status or with expand=lineItems, a product or an order by id, or a page of the
// event log filtered by type. Beside it, in the same rounds, a bare Fastify answering a body of the
// mix's mean size on as many connections: what moving those bytes costs a server that does nothing else.
import { Pool } from 'undici';
import { createOrganization, createWorkspace } from '../dist/account/admin.js';
import { createApiKey } from '../dist/api-keys/store.js';
import { idTimePrefix } from '../dist/lib/ids.js';
import { freePort, median, percentile, ratiosByRound, round, runAutocannon, startProcess } from './lib.mjs';
import { settle, startService } from './service.mjs';

const WORKSPACES = 100;
const PRODUCTS = 200;
const ORDERS = 20;
const CONNECTIONS = 50;
const PRD_IDS = idTimePrefix('prd', new Date());

/** Each kind of request and its share of the traffic. */
const MIX = [
  ['products page', 0.35],
  ['product by id', 0.2],
  ['orders page', 0.2],
  ['orders by status or expanded', 0.1],
  ['order by id', 0.1],
  ['events page by type', 0.05],
];

async function seedWorkspaces(db, organizationId) {
  const now = new Date();
  const workspaces = [];
  for (let w = 0; w < WORKSPACES; w++) {
    const ws = await createWorkspace(db, { organizationId, slug: `reads-${w}`, name: `Reads ${w}` }, now);
    const { key } = await createApiKey(db, { workspaceId: ws.id, name: 'Reads key', test: false }, now);
    workspaces.push({ id: ws.id, apiKey: key, n: w });
  }
  await db.query(
    `INSERT INTO products (id, workspace_id, name, description, price_amount, price_currency, active, metadata, created_at, updated_at)
     SELECT '${PRD_IDS}' || lpad(to_hex(w.n), 4, '0') || lpad(to_hex(g), 12, '0'), w.id, 'Product ' || g, 'A product for the benchmark',
            1000 + g, 'USD', true, '{"sku":"bench"}'::jsonb, date_trunc('milliseconds', now()) - make_interval(secs => ($2 - g) / 1000.0), now()
       FROM generate_series(1, $2::int) AS g, unnest($1::text[]) WITH ORDINALITY AS w (id, n)`,
    [workspaces.map((w) => w.id), PRODUCTS],
  );
  return workspaces;
}

/** Orders through the API (their line items, totals and events as users make them); every third paid. */
async function placeOrders(serviceUrl, workspaces) {
  const pool = new Pool(serviceUrl, { connections: 16 });
  const call = async (apiKey, method, path, body) => {
    const res = await pool.request({ path, method, headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: body && JSON.stringify(body) });
    const text = await res.body.text();
    if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${text}`);
    return JSON.parse(text);
  };
  await Promise.all(
    workspaces.map(async (w) => {
      const products = (await call(w.apiKey, 'GET', '/v1/products?limit=50')).data;
      w.productIds = products.map((p) => p.id);
      w.orderIds = [];
      for (let i = 0; i < ORDERS; i++) {
        const lineItems = [0, 1, 2].slice(0, 1 + (i % 3)).map((k) => ({ productId: products[(i * 7 + k * 13) % products.length].id, quantity: 1 + k }));
        const order = await call(w.apiKey, 'POST', '/v1/orders', { lineItems, customerEmail: `buyer${i}@example.com` });
        if (i % 3 === 0) await call(w.apiKey, 'POST', `/v1/orders/${order.id}/pay`, {});
        w.orderIds.push(order.id);
      }
    }),
  );
  await pool.close();
}

/** Every URL of the mix for every workspace, with pages 2 and 3 from the API's nextPageUrl. */
async function buildRequests(serviceUrl, workspaces) {
  const kinds = new Map(MIX.map(([kind]) => [kind, []]));
  const get = async (apiKey, path) => {
    const res = await fetch(serviceUrl + path, { headers: { authorization: `Bearer ${apiKey}` } });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${text}`);
    return { bytes: Buffer.byteLength(text), body: JSON.parse(text) };
  };
  const pages = async (kind, w, first, depth) => {
    let path = first;
    for (let page = 0; page < depth && path; page++) {
      const { bytes, body } = await get(w.apiKey, path);
      kinds.get(kind).push({ apiKey: w.apiKey, path, bytes });
      const next = body.nextPageUrl ? new URL(body.nextPageUrl, serviceUrl) : null;
      path = next ? next.pathname + next.search : null;
    }
  };
  for (const w of workspaces) {
    for (const limit of [10, 20, 50]) {
      await pages('products page', w, `/v1/products?limit=${limit}`, 3);
      await pages('orders page', w, `/v1/orders?limit=${limit}`, 2);
    }
    for (const path of ['/v1/orders?status=paid&limit=10', '/v1/orders?status=pending&limit=20', '/v1/orders?limit=10&expand=lineItems']) {
      await pages('orders by status or expanded', w, path, 1);
    }
    await pages('events page by type', w, '/v1/events?type=order.created&limit=20', 1);
    for (const id of w.productIds.slice(0, 10)) await pages('product by id', w, `/v1/products/${id}`, 1);
    for (const id of w.orderIds.slice(0, 5)) await pages('order by id', w, `/v1/orders/${id}`, 1);
  }
  return kinds;
}

/** Picks a request by the mix's shares, then uniformly within its kind. */
function picker(kinds) {
  const table = MIX.map(([kind, share]) => [kinds.get(kind), share]);
  return () => {
    let r = Math.random();
    for (const [requests, share] of table) {
      if ((r -= share) <= 0 || requests === table.at(-1)[0]) return requests[Math.floor(Math.random() * requests.length)];
    }
  };
}

/** Each kind alone, one request at a time: its median time, which tells where the mix's time goes. */
async function timeKinds(serviceUrl, kinds) {
  const times = [];
  for (const [kind, requests] of kinds) {
    const ms = [];
    for (let i = 0; i < 40; i++) {
      const r = requests[(i * 7919) % requests.length];
      const started = performance.now();
      const res = await fetch(serviceUrl + r.path, { headers: { authorization: `Bearer ${r.apiKey}` } });
      await res.arrayBuffer();
      ms.push(performance.now() - started);
    }
    times.push(`${kind} ${round(median(ms), 2)} ms`);
  }
  return times.join(', ');
}

function meanBytes(kinds) {
  return Math.round(MIX.reduce((sum, [kind, share]) => sum + share * (kinds.get(kind).reduce((s, r) => s + r.bytes, 0) / kinds.get(kind).length), 0));
}

async function mixedLoad(serviceUrl, pick, duration) {
  const result = await runAutocannon({
    url: serviceUrl,
    connections: CONNECTIONS,
    duration,
    requests: [
      {
        method: 'GET',
        setupRequest: (req) => {
          const r = pick();
          return { ...req, path: r.path, headers: { authorization: `Bearer ${r.apiKey}` } };
        },
      },
    ],
  });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} non-2xx answers and ${result.errors} errors from the mixed reads`);
  return result;
}

export async function apiReadMixed(target, seeded, { duration, rounds }) {
  const org = await createOrganization(seeded.db, { slug: `reads-${Date.now()}`, name: 'Reads' }, new Date());
  const workspaces = await seedWorkspaces(seeded.db, org.id);
  const service = await startService(target, { SVC_WORKERS: '0' });
  try {
    await placeOrders(service.url, workspaces);
    await seeded.db.query('ANALYZE');
    await settle(seeded.db);
    const kinds = await buildRequests(service.url, workspaces);
    const pick = picker(kinds);
    const bytes = meanBytes(kinds);
    const port = await freePort();
    const sameSize = await startProcess(['bench/bare-server.mjs'], { PORT: String(port), BODY_BYTES: String(bytes) }, 'ready');
    const sameUrl = `http://127.0.0.1:${port}/`;
    try {
      // Both warm up for a second first.
      await mixedLoad(service.url, pick, 1);
      await runAutocannon({ url: sameUrl, connections: 10, duration: 1 });
      const alone = await timeKinds(service.url, kinds);
      const runs = [];
      for (let i = 0; i < rounds; i++) {
        const same = await runAutocannon({ url: sameUrl, connections: CONNECTIONS, duration });
        const result = await mixedLoad(service.url, pick, duration);
        runs.push({ result, same, ratio: result.requests.average / same.requests.average });
      }
      const rate = median(runs.map((r) => r.result.requests.average));
      const ratio = median(runs.map((r) => r.ratio));
      const sizes = [...kinds.values()].flat().map((r) => r.bytes).sort((a, b) => a - b);
      return {
        name: `API read, realistic (${WORKSPACES} API keys and workspaces; products, orders and events, pages of 10-50 and pages 1-3, filters, by id; ${CONNECTIONS} connections)`,
        value: round(rate, 0),
        unit: 'req/s',
        p99Ms: median(runs.map((r) => r.result.latency.p99)),
        baseline: round(median(runs.map((r) => r.same.requests.average)), 0),
        baselineName: `bare Fastify answering the mix's mean body (${bytes} bytes)`,
        baselineP99Ms: median(runs.map((r) => r.same.latency.p99)),
        ratio: round(ratio, 3),
        extra: [
          `${[...kinds.values()].flat().length.toLocaleString('en')} distinct requests, bodies ${sizes[0]}-${sizes.at(-1)} bytes (median ${percentile(sizes, 50)})`,
          `p50 ${median(runs.map((r) => r.result.latency.p50))} ms`,
          `one at a time: ${alone}`,
          ratiosByRound(runs),
        ]
          .filter(Boolean)
          .join('; '),
        target: '(reported; aimed at ratio >= 0.13, p99 <= 20 ms)',
        pass: true,
        peakRssMb: service.peakRssMb(),
        rounds: runs.map((r) => ({ rate: round(r.result.requests.average, 0), sameSize: round(r.same.requests.average, 0), ratio: round(r.ratio, 3) })),
      };
    } finally {
      await sameSize.stop();
    }
  } finally {
    await service.stop();
  }
}
