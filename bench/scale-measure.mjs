// The measuring side of the scale scenario (scale.mjs): the requests and the claim, timed one at a
// time, taking turns between the sides so that whatever else the machine does falls on all alike.
import { idTimePrefix } from '../dist/lib/ids.js';
import { claimLocked } from '../dist/engine/delivery/claim.js';
import { Hold } from '../dist/engine/delivery/hold.js';
import { median, percentile } from './lib.mjs';
import { DAYS } from './scale-seed.mjs';

/** Endpoints per workspace, as seeded (seedTenants). */
export const ENDPOINTS = 10;
export const REQUESTS = 200;
export const WARM_UP = 20;
/** Rows a claim asks for: what a worker of 64 slots takes at most in one. */
export const CLAIM_LIMIT = 64;

/** A deterministic sequence of numbers in [0, 1), the same in both phases. */
function randoms(seed) {
  let s = seed;
  return () => ((s = (s * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
}

/** `count` events of the group, at times spread over its days, found by their ids' time. */
export async function sampleEvents(db, tenants, count) {
  const next = randoms(7);
  const ids = tenants.map((t) => t.id);
  const keyOf = new Map(tenants.map((t) => [t.id, t.apiKey]));
  const out = [];
  for (let i = 0; i < count; i++) {
    const at = new Date(Date.now() - (2 * 3_600_000 + next() * (DAYS - 1) * 86_400_000));
    const [row] = await db.query('SELECT id, workspace_id FROM events WHERE id >= $1 AND id < $2 AND workspace_id = ANY ($3::text[]) ORDER BY id LIMIT 1', [
      idTimePrefix('evt', at),
      'evt_~',
      `{${ids.join(',')}}`,
    ]);
    if (row) out.push({ id: row.id, workspaceId: row.workspace_id, apiKey: keyOf.get(row.workspace_id) });
  }
  return out;
}

/** The HTTP requests measured: request i of each, rotating over workspaces, endpoints and events. */
function requestsOf(tenants, events) {
  const tenant = (i) => tenants[(i * 37) % tenants.length];
  const endpoint = (i) => tenant(i).endpointIds[i % ENDPOINTS];
  const of = (path) => (i) => ({ apiKey: tenant(i).apiKey, path: path(i) });
  return [
    ['deliveries, first page', of(() => '/v1/webhooks/deliveries')],
    ['deliveries, endpointId and status=failed', of((i) => `/v1/webhooks/deliveries?endpointId=${endpoint(i)}&status=failed`)],
    ['deliveries, status=pending', of(() => '/v1/webhooks/deliveries?status=pending')],
    ['deliveries, eventId', (i) => ({ apiKey: events[i % events.length].apiKey, path: `/v1/webhooks/deliveries?eventId=${events[i % events.length].id}` })],
    ['events, first page', of(() => '/v1/events')],
    ['events, type=order.paid', of(() => '/v1/events?type=order.paid')],
    ['endpoint stats, 24h', of((i) => `/v1/webhooks/endpoints/${endpoint(i)}/stats?window=24h`)],
    ['endpoint stats, 7d', of((i) => `/v1/webhooks/endpoints/${endpoint(i)}/stats?window=7d`)],
  ];
}

function summary(ms) {
  const sorted = [...ms].sort((a, b) => a - b);
  return { median: median(sorted), p99: percentile(sorted, 99) };
}

/** One request through the service, timed; anything but a 200 stops the run. */
async function timed(serviceUrl, { apiKey, path }) {
  const started = performance.now();
  const res = await fetch(serviceUrl + path, { headers: { authorization: `Bearer ${apiKey}` } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${text}`);
  return performance.now() - started;
}

/**
 * The worker's claim through its own code (claimLocked: row locks of a transaction, generic plans),
 * in a transaction rolled back, so each claim finds the same rows. Returns the claim's time.
 */
async function timedClaim(db) {
  const tx = await db.begin(Hold.SETTINGS);
  try {
    const started = performance.now();
    const jobs = await claimLocked(tx, {}, new Date(), CLAIM_LIMIT);
    if (jobs.length === 0) throw new Error('the claim found no due row');
    return performance.now() - started;
  } finally {
    await tx.rollback();
  }
}

/**
 * Every measurement on every side (small tables; big tables, the small set's workspaces; big
 * tables, busy workspaces), side by side: request i of a query goes to each side in turn, so that
 * whatever else the machine does falls on all of them alike.
 */
export async function measure(sides) {
  const queries = [
    [`claim (${CLAIM_LIMIT} rows)`, (side) => () => timedClaim(side.db)],
    ...requestsOf(sides[0].tenants, sides[0].events).map(([query], q) => [query, (side) => (i) => timed(side.service.url, requestsOf(side.tenants, side.events)[q][1](i))]),
  ];
  const out = sides.map(() => []);
  for (const [query, of] of queries) {
    process.stdout.write(`    ${query}\n`);
    const runs = sides.map(of);
    const ms = sides.map(() => []);
    for (let i = 0; i < WARM_UP + REQUESTS; i++) {
      for (const [s, run] of runs.entries()) {
        const took = await run(i);
        if (i >= WARM_UP) ms[s].push(took);
      }
    }
    for (const [s, times] of ms.entries()) out[s].push({ query, ...summary(times) });
  }
  return out;
}
