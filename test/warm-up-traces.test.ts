import { trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tracing } from '../src/lib/trace.js';
import { startTracing, stopTracing } from '../src/ops/tracing/start.js';
import { warmUp, warmUpAttempts } from '../src/server/warm-up.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { eventually } from './helpers/delivery.js';
import { startOtlpReceiver, type OtlpReceiver } from './helpers/otlp.js';

/** The warm-up (server/warm-up.ts) with tracing on, exporting to a real OTLP/HTTP receiver. */
describe('the warm-up with tracing on', () => {
  let otlp: OtlpReceiver;
  let t: TestApp;
  const before = { ...process.env };

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    Object.assign(process.env, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '50' });
    expect(await startTracing()).toBe(true);
    t = await startTestApp();
  });

  afterAll(async () => {
    await t?.close();
    await stopTracing();
    await otlp?.close();
    process.env = before;
  });

  it('sends its attempts without a span: they are no deliveries', async () => {
    expect(await warmUpAttempts(t.ctx, 5)).toBe(5);
    // A span ended after the attempts is exported after any span they made.
    trace.getTracer('test').startSpan('test.after').end();
    await eventually(async () => {
      await tracing()!.flush();
      return otlp.spans.some((s) => s.name === 'test.after');
    });
    expect(otlp.spans.filter((s) => s.name === 'webhook.attempt')).toEqual([]);
  });

  it('makes no span of its requests, writes or statements, while a client\'s request beside it has its own', async () => {
    const marker = `test.after.${Date.now()}`;
    const [, client] = await Promise.all([warmUp(t.app, t.ctx, 2), t.call(t.demo.workspaces[0].apiKey, 'GET', '/v1/products')]);
    expect(client.statusCode).toBe(200);
    trace.getTracer('test').startSpan(marker).end();
    await eventually(async () => {
      await tracing()!.flush();
      return otlp.spans.some((s) => s.name === marker);
    });
    // The client's request only: one GET span, none of the warm-up's POSTs, PATCHes or writes.
    expect(otlp.spans.filter((s) => s.name === 'GET /v1/products')).toHaveLength(1);
    expect(otlp.spans.filter((s) => /^(POST|PATCH) |^outbox\.write$|^webhook\.attempt$/.test(s.name))).toEqual([]);
  });
});
