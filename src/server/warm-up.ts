import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import { createOrganization, createWorkspace } from '../account/admin.js';
import { createApiKey } from '../api-keys/store.js';
import { createEndpoint } from '../webhooks/endpoints/store.js';
import type { AppContext } from './context.js';

/** Warm-ups run side by side, each on a write connection of its own. */
const CONNECTIONS = 4;

/**
 * Runs the busiest requests through the whole app before the port opens, so that the first
 * clients pay neither for code that V8 has not compiled yet nor for database connections whose
 * server processes have not yet loaded the tables they use: a product created, read, changed and
 * listed, and the events listed, `rounds` times in all, by workspaces made for the purpose, each
 * with an endpoint that takes every event, so that every creation fans out. Each workspace lives in
 * a transaction of its own (a scope, db/scope.ts), CONNECTIONS of them side by side, and every one
 * is rolled back: no row is left, and no delivery is handed over or announced. The lists are then
 * read once more outside the transactions, through the read connections, and come back empty;
 * after that the credentials are dropped from the cache. The requests are neither logged nor
 * counted in the metrics. Resolves to how long it took, in ms.
 */
export async function warmUp(app: FastifyInstance, ctx: AppContext, rounds: number): Promise<number> {
  const started = performance.now();
  if (rounds <= 0) return 0;
  const level = app.log.level;
  app.log.level = 'warn';
  ctx.metrics.pauseHttp(true);
  const credentials: string[] = [];
  try {
    const per = Math.ceil(rounds / CONNECTIONS);
    const keys = await Promise.all(Array.from({ length: CONNECTIONS }, () => rolledBack(app, ctx, per, (id) => credentials.push(id))));
    for (const key of keys) {
      await send(app, key, 'GET', '/v1/products?limit=10');
      await send(app, key, 'GET', '/v1/events?limit=10');
    }
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
