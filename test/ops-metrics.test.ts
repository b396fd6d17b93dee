import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/server/app.js';
import { ManualClock } from '../src/lib/clock.js';
import { createContext } from '../src/server/runtime.js';
import { startTestApp, testConfig, type TestApp } from './helpers/app.js';
import { addEndpoint, createProduct, endpointState, testWorker } from './helpers/delivery.js';
import { expectError, ok } from './helpers/expect.js';
import { labelSets, sample } from './helpers/metrics.js';
import { promlint } from './helpers/promlint.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

/** GET /metrics in Prometheus text, with the metrics of docs/operations.md. */
describe('metrics', () => {
  let t: TestApp;
  let clock: ManualClock;
  let key: string;
  let healthy: Receiver;
  let broken: Receiver;
  const scrape = async () => {
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    return res.body;
  };

  beforeAll(async () => {
    clock = new ManualClock();
    // One attempt per delivery: every failure is final, so five of them disable an endpoint.
    t = await startTestApp({ clock, config: { allowPrivateTargets: true, retryScheduleMs: [] } });
    key = t.demo.workspaces[0].apiKey;
    healthy = await startReceiver();
    broken = await startReceiver(() => ({ status: 500 }));
  });
  afterAll(async () => {
    await healthy?.close();
    await broken?.close();
    await t?.close();
  });

  it('labels HTTP requests by route template and status, never by URL or id', async () => {
    const ids = [await createProduct(t, 'A'), await createProduct(t, 'B')];
    for (const id of ids) ok(await t.call(key, 'GET', `/v1/products/${id}`));
    expectError(await t.call(key, 'GET', '/v1/products/prd_01aaaaaaaaaaaaaaaaaaaaaaaa'), 404, 'NOT_FOUND');
    expectError(await t.call(key, 'GET', `/v1/nope/${ids[0]}`), 404, 'NOT_FOUND');
    expectError(await t.call(null, 'GET', '/zzz/anything'), 404, 'NOT_FOUND');
    ok(await t.call(key, 'GET', `/v1/workspaces/${t.demo.workspaces[0].id}/products`));

    const text = await scrape();
    const count = (route: string, status: string, method = 'GET') => sample(text, 'svc_http_request_duration_seconds_count', { method, route, status });
    expect(count('/v1/products/:productId', '200')).toBe(2);
    expect(count('/v1/products/:productId', '404')).toBe(1);
    expect(count('/v1/products', '201', 'POST')).toBe(2);
    expect(count('/v1/workspaces/:workspaceId/products', '200')).toBe(1);
    expect(count('unmatched', '404')).toBe(2);
    const routes = labelSets(text, 'svc_http_request_duration_seconds_count').map((l) => l.route);
    expect(routes.every((r) => !/prd_|wsp_|zzz|nope/.test(r))).toBe(true);
  });

  it('counts attempts by outcome with their duration, and auto-disables', async () => {
    const worker = testWorker(t);
    const good = await addEndpoint(t, healthy.url);
    await createProduct(t, 'C');
    await worker.runDue();
    let text = await scrape();
    expect(sample(text, 'svc_webhook_attempts_total', { outcome: 'success' })).toBe(1);
    expect(sample(text, 'svc_webhook_attempt_duration_seconds_count', { outcome: 'success' })).toBe(1);
    expect(sample(text, 'svc_webhook_attempts_in_flight')).toBe(0);
    expect(sample(text, 'svc_webhook_endpoint_auto_disables_total')).toBe(0);

    const bad = await addEndpoint(t, broken.url);
    for (let i = 0; i < 5; i++) {
      await createProduct(t, `Failing ${i}`);
      await worker.runDue();
    }
    expect(await endpointState(t, bad.id)).toMatchObject({ active: false, disabled_reason: 'auto' });
    await worker.stop();
    text = await scrape();
    expect(sample(text, 'svc_webhook_attempts_total', { outcome: 'http_error' })).toBe(5);
    expect(sample(text, 'svc_webhook_attempts_total', { outcome: 'success' })).toBe(1 + 5);
    expect(sample(text, 'svc_webhook_attempts_total', { outcome: 'timeout' })).toBe(0);
    expect(sample(text, 'svc_webhook_attempt_duration_seconds_bucket', { outcome: 'http_error', le: '+Inf' })).toBe(5);
    expect(sample(text, 'svc_webhook_endpoint_auto_disables_total')).toBe(1);
    expect(good.id).not.toBe(bad.id);
  });

  it('reports due deliveries and the age of the oldest one at scrape time', async () => {
    let text = await scrape();
    expect(sample(text, 'svc_webhook_deliveries_due')).toBe(0);
    expect(sample(text, 'svc_webhook_oldest_due_delivery_age_seconds')).toBe(0);
    await createProduct(t, 'Waiting');
    clock.advance(90_000);
    await createProduct(t, 'Waiting too');
    clock.advance(10_000);
    text = await scrape();
    // Two products reach the healthy endpoint (the broken one is disabled): two rows due, the oldest 100 s.
    expect(sample(text, 'svc_webhook_deliveries_due')).toBe(2);
    expect(sample(text, 'svc_webhook_oldest_due_delivery_age_seconds')).toBe(100);
  });

  it('reports the database pool and the process (event-loop delay, memory)', async () => {
    const text = await scrape();
    expect(sample(text, 'svc_db_pool_max_connections')).toBe(5);
    expect(sample(text, 'svc_db_pool_connections', { state: 'idle' })).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'svc_db_pool_waiting_requests')).toBe(0);
    expect(sample(text, 'nodejs_eventloop_lag_p99_seconds')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  it('passes the checks of promtool check metrics (names by type, units, help), the process metrics included', async () => {
    const text = await scrape();
    expect(text).toContain('# TYPE nodejs_active_handles gauge');
    expect(promlint(text)).toEqual([]);
    // The checker finds what promtool finds, e.g. prom-client's own default gauges named like counters.
    const sampleText = [
      '# HELP nodejs_active_handles_total Total number of active handles.',
      '# TYPE nodejs_active_handles_total gauge',
      'nodejs_active_handles_total 3',
      '# HELP svc_jobs Jobs.',
      '# TYPE svc_jobs counter',
      'svc_jobs{queueName="a"} 1',
      '# TYPE svc_delay_ms histogram',
      'svc_delay_ms_bucket{le="+Inf"} 1',
      'svc_delay_ms_sum 1',
      'svc_delay_ms_count 1',
    ].join('\n');
    expect(promlint(sampleText)).toEqual([
      'nodejs_active_handles_total: non-counter metrics should not have "_total" suffix',
      'svc_delay_ms: metric names should not contain abbreviated units',
      'svc_delay_ms: no help text',
      'svc_jobs: counter metrics should have "_total" suffix',
      "svc_jobs: label names should be written in 'snake_case' not 'camelCase'",
    ]);
    expect(() => promlint('# TYPE a gauge\n# TYPE a gauge\na 1')).toThrow('second TYPE line for metric name "a"');
  });

  it('asks for SVC_METRICS_TOKEN when it is set', async () => {
    const token = randomBytes(24).toString('base64url');
    const app = await buildApp(createContext(testConfig({ metricsToken: token }), t.ctx.db, randomBytes(32)));
    try {
      const get = (authorization?: string) => app.inject({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} });
      expect(expectError(await get(), 401, 'UNAUTHENTICATED').message).toBe('GET /metrics needs Authorization: Bearer <SVC_METRICS_TOKEN>.');
      expectError(await get(`Bearer ${token}x`), 401, 'UNAUTHENTICATED');
      expectError(await get(token), 401, 'UNAUTHENTICATED');
      const res = await get(`Bearer ${token}`);
      expect(res.statusCode).toBe(200);
      expect(res.body).toContain('svc_webhook_deliveries_due');
      // Probes stay open: the token guards the metrics only.
      expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });
});
