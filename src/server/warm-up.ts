import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createOrganization, createWorkspace } from '../account/admin.js';
import { createApiKey } from '../api-keys/store.js';
import { runAttempt } from '../engine/delivery/attempt.js';
import { jobOf } from '../engine/delivery/job.js';
import { newSigningSecret } from '../engine/delivery/secrets.js';
import { HttpSender } from '../engine/destinations/sender.js';
import { untraced } from '../lib/trace.js';
import { createEndpoint } from '../webhooks/endpoints/store.js';
import type { AppContext } from './context.js';

/** Warm-ups run side by side, each on a write connection of its own. */
const CONNECTIONS = 4;

/** Delivery attempts per round, and how many are in flight at once. */
const ATTEMPTS_PER_ROUND = 20;
const ATTEMPTS_AT_ONCE = 8;

/**
 * Runs the busiest requests through the whole app before the port opens, so that the first
 * clients pay neither for code that V8 has not compiled yet nor for database connections whose
 * server processes have not yet loaded the tables they use: a product created, read, changed and
 * listed, and the events listed, `rounds` times in all, by workspaces made for the purpose, each
 * with an endpoint that takes every event, so that every creation fans out. Each workspace lives in
 * a transaction of its own (a scope, db/scope.ts), CONNECTIONS of them side by side, and every one
 * is rolled back: no row is left, and no delivery is handed over or announced. The lists are then
 * read once more outside the transactions, through the read connections, and come back empty;
 * after that the credentials are dropped from the cache. The requests are neither logged, counted
 * in the metrics nor traced. Beside them, delivery attempts go to a receiver of the warm-up's own
 * (warmUpAttempts()). Resolves to how long it took, in ms.
 */
export async function warmUp(app: FastifyInstance, ctx: AppContext, rounds: number): Promise<number> {
  const started = performance.now();
  if (rounds <= 0) return 0;
  const level = app.log.level;
  app.log.level = 'warn';
  ctx.metrics.pauseHttp(true);
  const credentials: string[] = [];
  try {
    await untraced(async () => {
      const per = Math.ceil(rounds / CONNECTIONS);
      const [keys] = await Promise.all([
        Promise.all(Array.from({ length: CONNECTIONS }, () => rolledBack(app, ctx, per, (id) => credentials.push(id)))),
        warmUpAttempts(ctx, rounds * ATTEMPTS_PER_ROUND),
      ]);
      for (const key of keys) {
        await send(app, key, 'GET', '/v1/products?limit=10');
        await send(app, key, 'GET', '/v1/events?limit=10');
      }
    });
  } finally {
    for (const id of credentials) ctx.credentials.forget(id);
    ctx.metrics.pauseHttp(false);
    app.log.level = level;
  }
  return performance.now() - started;
}

/** `rounds` rounds by a workspace of its own, in a scope rolled back; resolves to the workspace's key. */
async function rolledBack(app: FastifyInstance, ctx: AppContext, rounds: number, made: (credentialId: string) => void): Promise<string> {
  const scope = await ctx.db.openScope();
  try {
    return await scope.run(async () => {
      const { key, id } = await workspace(ctx);
      made(id);
      for (let i = 0; i < rounds; i++) await round(app, key);
      return key;
    });
  } finally {
    await scope.rollback();
  }
}

/** A workspace with an API key and an endpoint that takes every event (in the warm-up's scope). */
async function workspace(ctx: AppContext): Promise<{ key: string; id: string }> {
  const now = ctx.clock.now();
  const tag = randomBytes(4).toString('hex');
  const org = await createOrganization(ctx.db, { slug: `warm-up-${tag}`, name: 'Warm-up' }, now);
  const ws = await createWorkspace(ctx.db, { organizationId: org.id, slug: 'warm-up', name: 'Warm-up' }, now);
  const { row, key } = await createApiKey(ctx.db, { workspaceId: ws.id, name: 'Warm-up', test: false }, now);
  await createEndpoint(ctx.db, ctx.secrets, { workspaceId: ws.id, url: 'https://warm-up.invalid/hook', subscribedEvents: ['*'] }, now);
  return { key, id: row.id };
}

/** One round. */
async function round(app: FastifyInstance, key: string): Promise<void> {
  const product = await send(app, key, 'POST', '/v1/products', { name: 'Warm-up', price: { amount: 100, currency: 'USD' }, metadata: { sku: 'warm-up' } });
  await send(app, key, 'GET', `/v1/products/${product.id}`);
  await send(app, key, 'PATCH', `/v1/products/${product.id}`, { name: 'Warm-up, changed' });
  await send(app, key, 'GET', '/v1/products?limit=10');
  await send(app, key, 'GET', '/v1/events?limit=10');
}

/** A request that must answer as a client's would, or the warm-up has gone wrong. */
async function send(app: FastifyInstance, key: string, method: 'GET' | 'POST' | 'PATCH', url: string, body?: object): Promise<{ id: string }> {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${key}` }, payload: body });
  if (res.statusCode >= 300) throw new Error(`warm-up: ${method} ${url} answered ${res.statusCode}: ${res.body.slice(0, 200)}`);
  return res.json() as { id: string };
}

/**
 * `count` delivery attempts, signed as the engine signs them, through an HTTP sender of the
 * warm-up's own to a receiver of its own on 127.0.0.1 that answers 204: the attempt, the signing,
 * undici's client and Node's HTTP server (which the API's requests reach and inject() does not)
 * run compiled when the first deliveries go. Nothing is written, counted, traced or sent elsewhere.
 * Resolves to the number of signed requests the receiver got; fails unless every attempt succeeded.
 */
export async function warmUpAttempts(ctx: AppContext, count: number): Promise<number> {
  let received = 0;
  const receiver = createServer((req, res) => {
    if (req.headers['webhook-signature']) received++;
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const sender = new HttpSender({ timeoutMs: ctx.config.deliveryTimeoutMs, allowPrivateTargets: true });
  const deps = { clock: ctx.clock, secrets: ctx.secrets, sender, config: ctx.config, metrics: { attemptStarted() {}, attemptFinished() {} } };
  const row = {
    workspace_id: 'ws_warm_up',
    endpoint_id: 'we_warm_up',
    event_type: 'product.created',
    url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
    url_enc: null,
    exchange: null,
    routing_key: null,
    subject: null,
    propagate_trace: false,
    consecutive_failures: 0,
    endpoint_throttled: false,
    rate_limit: null,
    headers_enc: null,
    secret_enc: ctx.secrets.encrypt(newSigningSecret()),
    previous_secret_enc: null,
    previous_secret_expires_at: null,
  };
  const attemptOne = async (id: string) => {
    const body = JSON.stringify({ id: `evt_warm_up_${id}`, type: row.event_type, created: ctx.clock.now().toISOString(), data: { object: { id: `prd_warm_up_${id}`, name: 'Warm-up' } } });
    const taken = { attempt: 0, mark: ctx.clock.now(), hold: null, endpointActive: true, body, trace: null };
    const outcome = await runAttempt(deps, jobOf({ ...row, id: `whd_warm_up_${id}`, event_id: `evt_warm_up_${id}` }, taken));
    if (outcome.kind !== 'attempted' || outcome.status !== 'success') throw new Error(`warm-up: an attempt to its own receiver ended ${outcome.status}`);
  };
  try {
    await untraced(async () => {
      for (let sent = 0; sent < count; sent += ATTEMPTS_AT_ONCE) {
        await Promise.all(Array.from({ length: Math.min(ATTEMPTS_AT_ONCE, count - sent) }, (_, i) => attemptOne(`${sent + i}`)));
      }
    });
    return received;
  } finally {
    await sender.close();
    receiver.closeAllConnections();
    receiver.close();
  }
}
