import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.js';
import { CLI, cliBuilt, freePort, request, startCommand, type Server } from './helpers/cli.js';
import { POSTGRES_URL } from './helpers/db.js';
import { eventually } from './helpers/delivery.js';
import { sample } from './helpers/metrics.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

/**
 * Health and metrics on real processes: a process that delivers serves /healthz, /readyz and
 * /metrics on SVC_METRICS_PORT, and its /readyz turns 503 the moment SIGTERM arrives, while the
 * attempt in flight is still finishing. The process is `svc worker`, which has no API of its own.
 */
describe('health and metrics of a delivering process', { timeout: 180_000 }, () => {
  let receiver: Receiver;
  let server: Server;
  let apiKey: string;
  let api: string;
  let ops: string;
  let t: TestApp | null = null;

  beforeAll(async () => {
    if (!cliBuilt()) throw new Error(`${CLI} is missing: build first with npx tsc -p .`);
    receiver = await startReceiver(() => ({ hang: true }));
    const metricsPort = await freePort();
    ops = `http://127.0.0.1:${metricsPort}`;
    const env: Record<string, string> = { LOG_LEVEL: 'warn', SVC_ALLOW_PRIVATE_TARGETS: '1', SVC_METRICS_PORT: String(metricsPort), SVC_DELIVERY_TIMEOUT: '20s', SVC_LEASE: '60s' };
    // The API in this process, the worker apart, on one schema and one master key.
    const masterKey = randomBytes(32);
    t = await startTestApp({ masterKey, config: { allowPrivateTargets: true } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    api = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
    apiKey = t.demo.workspaces[0].apiKey;
    const url = `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${t.testDb.schema}`)}`;
    server = await startCommand(['worker'], { ...env, DATABASE_URL: url, SVC_MASTER_KEY: masterKey.toString('hex') }, /health and metrics on \S+\n/);
  });
  afterAll(async () => {
    receiver?.release();
    await server?.exited;
    await receiver?.close();
    await t?.close();
  });

  it('answers on SVC_METRICS_PORT, counts the attempt in flight, and is not ready from SIGTERM on until it exits', async () => {
    expect(await (await fetch(`${ops}/healthz`)).json()).toEqual({ status: 'ok' });
    expect(await (await fetch(`${ops}/readyz`)).json()).toEqual({ status: 'ready', checks: { database: 'ok', migrations: 'ok' } });

    expect((await request(`${api}/v1/webhooks/endpoints`, apiKey, { method: 'POST', body: { url: `${receiver.url}/in`, subscribedEvents: ['product.*'] } })).status).toBe(201);
    expect((await request(`${api}/v1/products`, apiKey, { method: 'POST', body: { name: 'Slow to answer' } })).status).toBe(201);
    await receiver.waitFor(1, 60_000);
    const metrics = await (await fetch(`${ops}/metrics`)).text();
    expect(sample(metrics, 'svc_webhook_attempts_in_flight')).toBe(1);

    process.kill(server.pid, 'SIGTERM');
    await eventually(async () => (await fetch(`${ops}/readyz`)).status === 503);
    const body = await (await fetch(`${ops}/readyz`)).json();
    expect(body.error).toMatchObject({ code: 'UNAVAILABLE', details: [{ path: 'shutdown', message: 'the process is stopping' }] });
    expect((await fetch(`${ops}/healthz`)).status).toBe(200);

    // The attempt in flight ends, is recorded, and the process exits cleanly.
    receiver.release({ status: 200 });
    expect(await server.exited).toBe(0);
  });
});
