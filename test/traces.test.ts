import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tracing } from '../src/lib/trace.js';
import { startTracing, stopTracing, tracingWanted } from '../src/ops/tracing/start.js';
import type { DeliveryWorker } from '../src/engine/delivery/worker.js';
import { buildApp } from '../src/server/app.js';
import { openPostgres } from '../src/db/postgres.js';
import { createContext } from '../src/server/runtime.js';
import { startTestApp, testConfig, type TestApp } from './helpers/app.js';
import { POSTGRES_URL } from './helpers/db.js';
import { TcpProxy } from './helpers/tcp-proxy.js';
import { eventually, testWorker } from './helpers/delivery.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './helpers/otlp.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

const SETTINGS = { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'svc-traces-test', OTEL_BSP_SCHEDULE_DELAY: '50' };
/** Text a request body carries, which no span may. */
const BODY_MARKER = 'hat-body-3c9f1e';

describe('traces over OTLP/HTTP', () => {
  let otlp: OtlpReceiver;
  let t: TestApp;
  let withTrace: Receiver;
  let without: Receiver;
  let worker: DeliveryWorker;
  const secrets: string[] = [];
  const before = { ...process.env };
  let base: string;

  /** A request over a real socket (the body read from it as in production), with the workspace's API key. */
  async function send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any }> {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${t.demo.workspaces[0].apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: await res.json() };
  }

  /** Exports what has ended and waits until `check` holds of the spans received. */
  async function spansWhen(check: (spans: ReceivedSpan[]) => boolean): Promise<ReceivedSpan[]> {
    await eventually(async () => {
      await tracing()!.flush();
      return check(otlp.spans);
    });
    return otlp.spans;
  }

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    Object.assign(process.env, SETTINGS, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlp.url });
    expect(await startTracing()).toBe(true);
    t = await startTestApp({ config: { allowPrivateTargets: true } });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    withTrace = await startReceiver();
    without = await startReceiver();
    const key = t.demo.workspaces[0].apiKey;
    for (const [receiver, propagateTrace] of [
      [withTrace, true],
      [without, false],
    ] as const) {
      const res = await t.call(key, 'POST', '/v1/webhooks/endpoints', { url: receiver.url, subscribedEvents: ['product.*'], propagateTrace });
      expect(res.statusCode).toBe(201);
      expect(res.json().propagateTrace).toBe(propagateTrace);
      secrets.push(res.json().secret);
    }
  });

  afterAll(async () => {
    await worker?.stop();
    await withTrace?.close();
    await without?.close();
    await t?.close();
    await stopTracing();
    await otlp?.close();
    process.env = before;
  });

  it('keeps the SDK out of every module but the one startTracing imports on demand', () => {
    const files = readdirSync('src', { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    expect(files.length).toBeGreaterThan(100);
    for (const file of files) {
      const text = readFileSync(join('src', file), 'utf8');
      const inTracing = file.startsWith(join('ops', 'tracing'));
      if (!inTracing) expect(text, file).not.toMatch(/from '@opentelemetry\//);
      // Only a dynamic import reaches the SDK's modules: the rest import the start alone.
      if (!inTracing) expect(text, file).not.toMatch(/from '[./]*(ops\/)?tracing\/(?!start\.js)/);
    }
    expect(readFileSync('src/ops/tracing/start.ts', 'utf8')).toContain("await import('./sdk.js')");
  });

  it('is wanted only when an OTLP endpoint or an exporter is set, and not disabled', () => {
    expect(tracingWanted({})).toBe(false);
    expect(tracingWanted({ OTEL_SERVICE_NAME: 'svc' })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' })).toBe(true);
    expect(tracingWanted({ OTEL_TRACES_EXPORTER: 'console' })).toBe(true);
    expect(tracingWanted({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(false);
    expect(tracingWanted({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(false);
  });

  it('traces a request, its statements and outbox write, and each attempt linked to it', async () => {
    // The first product's deliveries are claimed by the worker started after it; the second's are handed over.
    const first = await send('POST', '/v1/products', { name: BODY_MARKER });
    expect(first.status).toBe(201);
    worker = testWorker(t);
    await worker.start();
    await Promise.all([withTrace.waitFor(1), without.waitFor(1)]);
    const second = await send('POST', '/v1/products', { name: `${BODY_MARKER}-2` });
    expect(second.status).toBe(201);
    await Promise.all([withTrace.waitFor(2), without.waitFor(2)]);

    const spans = await spansWhen((all) => all.filter((s) => s.name === 'webhook.attempt').length >= 4 && all.filter((s) => s.name === 'POST /v1/products').length >= 2);
    expect(new Set(spans.map((s) => s.service))).toEqual(new Set(['svc-traces-test']));
    const requests = spans.filter((s) => s.name === 'POST /v1/products');
    expect(requests).toHaveLength(2);
    for (const request of requests) {
      expect(request.kind).toBe(2); // SERVER
      expect(request.parentSpanId).toBeNull();
      expect(request.attributes).toMatchObject({
        'http.request.method': 'POST',
        'http.route': '/v1/products',
        'http.response.status_code': 201,
        'svc.workspace.id': t.demo.workspaces[0].id,
      });
      // The outbox write is a child of the request (made after its body was read), its statement a child of the write.
      const write = spans.find((s) => s.parentSpanId === request.spanId && s.name === 'outbox.write');
      expect(write?.attributes).toMatchObject({ 'svc.event.type': 'product.created', 'svc.event.count': 1, 'svc.delivery.count': 2 });
      const statement = spans.find((s) => s.parentSpanId === write!.spanId);
      expect(statement?.kind).toBe(3); // CLIENT
      expect(statement?.attributes).toMatchObject({ 'db.system.name': 'postgresql', 'db.operation.name': 'WITH' });
      expect(statement?.attributes['db.query.text']).toMatch(/INSERT INTO events/);
      expect(statement?.traceId).toBe(request.traceId);
    }

    const attempts = spans.filter((s) => s.name === 'webhook.attempt');
    expect(attempts).toHaveLength(4);
    for (const attempt of attempts) {
      expect(attempt.parentSpanId).toBeNull();
      expect(attempt.attributes).toMatchObject({
        'svc.event.type': 'product.created',
        'svc.attempt': 1,
        'svc.outcome': 'success',
        'http.response.status_code': 200,
        'svc.workspace.id': t.demo.workspaces[0].id,
      });
      expect(attempt.attributes['svc.response_time_ms']).toEqual(expect.any(Number));
      expect(attempt.status.code).not.toBe(2);
      // Linked to the request that wrote its event, in a trace of its own.
      expect(attempt.links).toHaveLength(1);
      const cause = requests.find((r) => r.spanId === attempt.links[0].spanId);
      expect(cause?.traceId).toBe(attempt.links[0].traceId);
      expect(attempt.traceId).not.toBe(cause!.traceId);
    }
    // Each request caused one attempt per endpoint.
    for (const request of requests) expect(attempts.filter((a) => a.links[0].spanId === request.spanId)).toHaveLength(2);

    // A traceparent, the attempt span's own context, only where the endpoint asked for it.
    for (const received of withTrace.requests) {
      const [, traceId, spanId, flags] = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(received.headers.traceparent as string) ?? [];
      expect(flags).toBe('01');
      const attempt = attempts.find((a) => a.spanId === spanId);
      expect(attempt?.traceId).toBe(traceId);
      expect(attempt?.attributes['svc.delivery.id']).toBe(received.headers['webhook-id']);
    }
    for (const received of without.requests) expect(received.headers).not.toHaveProperty('traceparent');
  });

  it('keeps the request span current when the body arrives after the headers', async () => {
    const body = JSON.stringify({ name: 'Slow scarf' });
    const status = await new Promise<number>((resolve, reject) => {
      const url = new URL('/v1/products', base);
      const req = request(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.demo.workspaces[0].apiKey}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.flushHeaders();
      setTimeout(() => req.end(body), 100);
    });
    expect(status).toBe(201);
    const spans = await spansWhen((all) => all.filter((s) => s.name === 'POST /v1/products').length >= 3);
    const [slow] = spans.filter((s) => s.name === 'POST /v1/products').slice(-1);
    expect(spans.find((s) => s.name === 'outbox.write' && s.parentSpanId === slow.spanId)).toBeDefined();
  });

  it("continues a caller's trace and names unmatched requests by method alone", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parent = '00f067aa0ba902b7';
    const res = await send('GET', '/v1/products?limit=1', undefined, { traceparent: `00-${traceId}-${parent}-01` });
    expect(res.status).toBe(200);
    const missing = await t.app.inject({ method: 'GET', url: '/no-such-thing' });
    expect(missing.statusCode).toBe(404);
    const spans = await spansWhen((all) => all.some((s) => s.name === 'GET /v1/products') && all.some((s) => s.name === 'GET'));
    const list = spans.find((s) => s.name === 'GET /v1/products')!;
    expect(list.traceId).toBe(traceId);
    expect(list.parentSpanId).toBe(parent);
    // The page's read is a statement under the request.
    const read = spans.find((s) => s.parentSpanId === list.spanId && s.attributes['db.system.name'] === 'postgresql');
    expect(read?.name).toBe('SELECT');
    expect(read?.attributes['db.query.text']).toMatch(/FROM products/);
    const unmatched = spans.find((s) => s.name === 'GET')!;
    expect(unmatched.attributes).toMatchObject({ 'http.response.status_code': 404 });
    expect(unmatched.attributes).not.toHaveProperty('http.route');
    expect(unmatched.status.code).not.toBe(2);
  });

  it('records errors: a failed attempt and a failed statement', async () => {
    const failing = await startReceiver(() => ({ status: 503 }));
    try {
      const res = await t.call(t.demo.workspaces[1].apiKey, 'POST', '/v1/webhooks/endpoints', { url: failing.url, subscribedEvents: ['product.*'] });
      secrets.push(res.json().secret);
      await t.call(t.demo.workspaces[1].apiKey, 'POST', '/v1/products', { name: 'Scarf' });
      await failing.waitFor(1);
      await trace.getTracer('test').startActiveSpan('test.parent', async (span) => {
        await expect(t.ctx.db.query('SELECT 1 / $1::int AS x', [0])).rejects.toThrow(/division by zero/);
        span.end();
      });
      const spans = await spansWhen(
        (all) => all.some((s) => s.name === 'webhook.attempt' && s.attributes['svc.outcome'] === 'pending') && all.some((s) => s.name === 'test.parent'),
      );
      const attempt = spans.find((s) => s.name === 'webhook.attempt' && s.attributes['svc.outcome'] === 'pending')!;
      expect(attempt.attributes).toMatchObject({ 'http.response.status_code': 503, 'svc.workspace.id': t.demo.workspaces[1].id });
      expect(attempt.status).toMatchObject({ code: 2, message: 'HTTP 503' });
      expect(attempt.events).toContainEqual({ name: 'exception', attributes: expect.objectContaining({ 'exception.message': 'HTTP 503' }) });

      const parent = spans.find((s) => s.name === 'test.parent')!;
      const statement = spans.find((s) => s.parentSpanId === parent.spanId)!;
      expect(statement.name).toBe('SELECT');
      expect(statement.attributes['db.query.text']).toBe('SELECT 1 / $1::int AS x');
      expect(statement.status.code).toBe(2);
      expect(statement.events.find((e) => e.name === 'exception')?.attributes['exception.message']).toMatch(/division by zero/);
    } finally {
      await failing.close();
    }
  });

  it('records a request answered 5xx as an error, with its exception', async () => {
    // A second service on the same schema, its connections through a proxy the test can silence.
    const proxy = new TcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
    await proxy.start();
    const url = new URL(POSTGRES_URL);
    url.host = `127.0.0.1:${proxy.port}`;
    const db = await openPostgres({ url: url.toString(), schema: t.testDb.schema, timeouts: { connectMs: 1_000, statementMs: 1_000, queryMs: 1_500, keepAliveMs: 1_000 } });
    const ctx = createContext(testConfig(), db, randomBytes(32));
    const app = await buildApp(ctx);
    try {
      const headers = { authorization: `Bearer ${t.demo.workspaces[0].apiKey}` };
      expect((await app.inject({ method: 'GET', url: '/v1/orders', headers })).statusCode).toBe(200);
      proxy.hang();
      const res = await app.inject({ method: 'GET', url: '/v1/orders', headers });
      expect(res.statusCode).toBe(503);
      const id = res.headers['request-id'];
      const spans = await spansWhen((all) => all.some((s) => s.attributes['svc.request.id'] === id));
      const failed = spans.find((s) => s.attributes['svc.request.id'] === id)!;
      expect(failed.name).toBe('GET /v1/orders');
      expect(failed.attributes['http.response.status_code']).toBe(503);
      expect(failed.status.code).toBe(2);
      expect(failed.events.find((e) => e.name === 'exception')?.attributes['exception.message']).toMatch(/database unavailable/);
      const statement = spans.find((s) => s.parentSpanId === failed.spanId && s.attributes['db.system.name'] === 'postgresql');
      expect(statement?.status.code).toBe(2);
    } finally {
      proxy.release();
      await app.close();
      await ctx.rateLimits.close();
      await db.close();
      await proxy.stop();
    }
  });

  it('never exports a credential, a signing secret or a request body', async () => {
    await tracing()!.flush();
    const exported = otlp.raw.join('\n');
    expect(otlp.raw.length).toBeGreaterThan(0);
    expect(exported).toContain('POST /v1/products');
    const credentials = [...t.demo.workspaces.flatMap((w) => [w.apiKey, w.testApiKey]), ...t.demo.users.map((u) => u.token)].filter(Boolean);
    expect(credentials.length).toBeGreaterThan(2);
    for (const credential of credentials) expect(exported).not.toContain(credential);
    expect(exported.toLowerCase()).not.toContain('bearer');
    expect(secrets.length).toBeGreaterThanOrEqual(3);
    for (const secret of secrets) {
      expect(exported).not.toContain(secret);
      expect(exported).not.toContain(secret.slice('whsec_'.length));
    }
    expect(exported).not.toContain(BODY_MARKER);
  });
});
