import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenChannel } from '../src/db/channels.js';
import { DELIVERY_CHANNEL } from '../src/engine/delivery/handoff.js';
import { warmUp, warmUpAttempts } from '../src/server/warm-up.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { labelSets, sample } from './helpers/metrics.js';

const TABLES = ['organizations', 'workspaces', 'api_keys', 'webhook_endpoints', 'products', 'events', 'webhook_deliveries'];

/** What `svc serve` runs before it listens (server/warm-up.ts), on real PostgreSQL. */
describe('the warm-up', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  const counts = async () =>
    Object.fromEntries(await Promise.all(TABLES.map(async (table) => [table, (await t.ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`))[0].n])));

  it('runs the busiest requests and leaves no row, credential, wake-up or metric behind', async () => {
    const before = await counts();
    const cached = t.ctx.credentials.size;
    const wakeups: string[] = [];
    const unlisten = await listenChannel(t.ctx.db, DELIVERY_CHANNEL, (payload) => wakeups.push(payload));
    try {
      expect(await warmUp(t.app, t.ctx, 8)).toBeGreaterThan(0);
      expect(await counts()).toEqual(before);
      expect(t.ctx.credentials.size).toBe(cached);
      const routes = labelSets(await t.ctx.metrics.text(), 'svc_http_request_duration_seconds_count').map((l) => l.route);
      expect(routes).not.toContain('/v1/products');
      // A NOTIFY sent at a commit would have arrived by now.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(wakeups).toEqual([]);
    } finally {
      await unlisten();
    }
    // Counting goes on for the clients' requests.
    await t.call(t.demo.workspaces[0].apiKey, 'GET', '/v1/products');
    expect(sample(await t.ctx.metrics.text(), 'svc_http_request_duration_seconds_count', { method: 'GET', route: '/v1/products', status: '200' })).toBe(1);
  });

  it('sends signed attempts to a receiver of its own, counted nowhere', async () => {
    const before = sample(await t.ctx.metrics.text(), 'svc_webhook_attempts_total', { outcome: 'success' }) ?? 0;
    expect(await warmUpAttempts(t.ctx, 19)).toBe(19);
    expect(sample(await t.ctx.metrics.text(), 'svc_webhook_attempts_total', { outcome: 'success' }) ?? 0).toBe(before);
    expect(sample(await t.ctx.metrics.text(), 'svc_webhook_attempts_in_flight') ?? 0).toBe(0);
  });

  it('runs nothing with no rounds (SVC_WARM_UP=0)', async () => {
    const before = await counts();
    expect(await warmUp(t.app, t.ctx, 0)).toBe(0);
    expect(await counts()).toEqual(before);
  });
});
