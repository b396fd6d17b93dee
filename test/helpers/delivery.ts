import { createHmac, timingSafeEqual } from 'node:crypto';
import { expect } from 'vitest';
import type { Queryable } from '../../src/db/db.js';
import { claimLocked } from '../../src/engine/delivery/claim.js';
import type { Job } from '../../src/engine/delivery/job.js';
import { DeliveryWorker } from '../../src/engine/delivery/worker.js';
import { idTimePrefix } from '../../src/lib/ids.js';
import { createEndpoint } from '../../src/webhooks/endpoints/store.js';
import { requestHeadersSql } from '../../src/webhooks/attempts/request-headers.js';
import { startTestApp, type TestApp } from './app.js';
import { startReceiver, type Receiver } from './receiver.js';

/** A test app started with `options` and a receiver on 127.0.0.1, for a describe block's beforeAll. */
export async function openAppAndReceiver(options: Parameters<typeof startTestApp>[0]): Promise<{ t: TestApp; receiver: Receiver }> {
  const t = await startTestApp(options);
  return { t, receiver: await startReceiver() };
}

/** Closes what openAppAndReceiver opened (either may be missing if opening failed). */
export async function closeAppAndReceiver(t: TestApp | undefined, receiver: Receiver | undefined): Promise<void> {
  await receiver?.close();
  await t?.close();
}

export interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: string;
  attempt: number;
  next_attempt_at: Date | null;
  created_at: Date;
  delivered_at: Date | null;
  last_attempt_at: Date | null;
  error: string | null;
  response_status: number | null;
  response_time_ms: number | null;
  request_headers: Record<string, string> | null;
  response_body: string | null;
  response_headers: Record<string, string> | null;
}

/** An active endpoint in demo workspace `workspace`, created through the store; returns its id and secret. */
export async function addEndpoint(t: TestApp, url: string, subscribedEvents = ['product.*'], workspace = 0) {
  const { row, secret } = await createEndpoint(
    t.ctx.db,
    t.ctx.secrets,
    { workspaceId: t.demo.workspaces[workspace].id, url, subscribedEvents },
    t.clock.now(),
  );
  return { id: row.id, secret };
}

/** Creates a product through the API (so its event and deliveries come from the real fan-out). */
export async function createProduct(t: TestApp, name = 'Hat', workspace = 0): Promise<string> {
  const res = await t.call(t.demo.workspaces[workspace].apiKey, 'POST', '/v1/products', { name });
  expect(res.statusCode).toBe(201);
  return res.json().id;
}

/**
 * An endpoint's delivery rows, each with its latest attempt's request headers and response as the
 * API shows them (the attempt's row keeps them: src/webhooks/deliveries/store.ts findDelivery).
 */
export async function deliveriesOf(t: TestApp, endpointId: string): Promise<DeliveryRow[]> {
  const rows = await t.ctx.db.query<DeliveryRow>('SELECT * FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY created_at, id', [endpointId]);
  const latest = await t.ctx.db.query<Pick<DeliveryRow, 'request_headers' | 'response_body' | 'response_headers'> & { delivery_id: string }>(
    `SELECT DISTINCT ON (delivery_id) delivery_id, ${requestHeadersSql('a')} AS request_headers, response_body, response_headers
       FROM webhook_delivery_attempts a WHERE endpoint_id = $1 ORDER BY delivery_id, attempt DESC`,
    [endpointId],
  );
  const byId = new Map(latest.map((a) => [a.delivery_id, a]));
  return rows.map((row) => {
    const a = byId.get(row.id);
    return a ? { ...row, request_headers: a.request_headers, response_body: a.response_body, response_headers: a.response_headers } : row;
  });
}

export async function endpointState(t: TestApp, endpointId: string) {
  const [row] = await t.ctx.db.query<{ active: boolean; disabled_reason: string | null; consecutive_failures: number }>(
    'SELECT active, disabled_reason, consecutive_failures FROM webhook_endpoints WHERE id = $1',
    [endpointId],
  );
  return row;
}

/**
 * Takes up to `limit` due rows as another worker would hold them past its hold: under a lease
 * (next_attempt_at pushed forward, committed), the jobs' marks being the lease.
 */
export async function leaseDue(t: TestApp, now: Date, limit = 10): Promise<Job[]> {
  const lease = new Date(now.getTime() + t.ctx.config.leaseMs);
  return t.ctx.db.tx(async (q) => {
    const jobs = await claimLocked(q, { finish() {}, drop() {} }, now, limit);
    if (jobs.length > 0) await q.query('UPDATE webhook_deliveries SET next_attempt_at = $2 WHERE id = ANY($1::text[])', [jobs.map((j) => j.id), lease]);
    return jobs.map((job) => ({ ...job, mark: lease, hold: null }));
  });
}

/** A worker whose unexpected faults fail the test instead of vanishing. */
export function testWorker(t: TestApp, options: { concurrency?: number } = {}): DeliveryWorker {
  return new DeliveryWorker(t.ctx, {
    ...options,
    onError: (error, during) => {
      throw new Error(`worker ${during} failed: ${(error as Error).message}`);
    },
  });
}

/**
 * A verifier written from the signature rules of docs/receiving-webhooks.md alone: the key is the
 * base64url-decoded part after `whsec_`, the signed content `<id>.<timestamp>.<raw body>`, and any
 * `v1,` value may match.
 */
export function verifyBySpec(secret: string, headers: Record<string, string>, rawBody: Buffer): boolean {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (!id || !timestamp || !signatures) return false;
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64url');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(rawBody).digest();
  return signatures.split(' ').some((value) => {
    const [version, signature] = value.split(',');
    const given = Buffer.from(signature ?? '', 'base64');
    return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
  });
}

/** Polls `check` until it returns true; for conditions reached by background workers. */
export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A claim's statement (claim.ts): it takes its rows under FOR UPDATE SKIP LOCKED. */
export const CLAIM = /FOR UPDATE SKIP LOCKED/;

/**
 * Records every statement run through the app's database, in open transactions too (held claims),
 * and, for claims, how many rows each took and which.
 */
export function recordStatements(t: TestApp): { sql: string; rows: number; ids: string[] }[] {
  const log: { sql: string; rows: number; ids: string[] }[] = [];
  const recorded = (query: Queryable['query']) =>
    (async (sql: string, params?: unknown[]) => {
      const rows = await query(sql, params);
      log.push({ sql, rows: rows.length, ids: rows.map((r) => (r as { id?: string }).id ?? '') });
      return rows;
    }) as Queryable['query'];
  t.ctx.db.query = recorded(t.ctx.db.query.bind(t.ctx.db));
  const begin = t.ctx.db.begin?.bind(t.ctx.db);
  if (begin) {
    t.ctx.db.begin = async () => {
      const tx = await begin();
      return { ...tx, query: recorded(tx.query) };
    };
  }
  return log;
}

/**
 * `count` endpoints of the first workspace at `url` (each with `?endpoint=n`), with `perEndpoint`
 * pending rows due now each, in turn: a backlog a restart finds. Returns the endpoints' ids.
 */
export async function hungBacklog(t: TestApp, url: string, count: number, perEndpoint: number): Promise<string[]> {
  const now = new Date();
  const ids = [];
  for (let e = 0; e < count; e++) ids.push((await addEndpoint(t, `${url}?endpoint=${e}`)).id);
  await t.ctx.db.query(
    `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, payload, status, attempt, next_attempt_at, created_at)
     SELECT $1 || lpad(g::text, 6, '0') || lpad(e.n::text, 6, '0'), $2, e.id, 'evt_x', 'product.created', '{}', 'pending', 0, $4, $4
       FROM generate_series(1, $5::int) g, unnest($3::text[]) WITH ORDINALITY AS e (id, n)`,
    [idTimePrefix('whd', now), t.demo.workspaces[0].id, ids, now, perEndpoint],
  );
  return ids;
}
