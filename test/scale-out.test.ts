import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cliBuilt, freePort, request, runJson, startCommand, startServer, type Server } from './helpers/cli.js';
import { freshSchema } from './helpers/db.js';
import { eventually } from './helpers/delivery.js';
import { sample } from './helpers/metrics.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

/** Slots per worker: few, so that no one worker can take a burst alone and the work must spread. */
const CONCURRENCY = 2;
const ENDPOINTS = 3;

/**
 * Settings of every process. The lease is short so that the killed worker's leased rows come back
 * within the test; it must be more than twice the delivery time-out (src/lib/config.ts), and the
 * time-out longer than the receivers hold requests during the fault, so no attempt fails.
 */
const SETTINGS = {
  LOG_LEVEL: 'warn',
  SVC_ALLOW_PRIVATE_TARGETS: '1',
  SVC_RATE_LIMIT_API_KEY: '100000',
  SVC_WORKER_CONCURRENCY: String(CONCURRENCY),
  SVC_DELIVERY_TIMEOUT: '6s',
  SVC_LEASE: '13s',
};
const LEASE_MS = 13_000;

interface Endpoint {
  id: string;
  secret: string;
  receiver: Receiver;
}

interface Process extends Server {
  /** The API's base URL, or the worker's health and metrics URL. */
  url: string;
}

/**
 * Two `svc serve` processes without workers and three `svc worker` processes on one PostgreSQL
 * schema, all real processes of the built CLI. Products are created through both APIs; three
 * endpoints on receivers on 127.0.0.1 get every delivery once, signed, from all three workers (each
 * worker's /metrics counts the attempts it made). Then one worker is killed with SIGKILL while
 * the receivers hold its requests unanswered: nothing is lost, and the only repeats are exactly the
 * requests it had in flight.
 */
describe('scale-out: two API processes and three workers on one PostgreSQL', { timeout: 120_000 }, () => {
  let schema: Awaited<ReturnType<typeof freshSchema>>;
  let env: Record<string, string>;
  let apiKey: string;
  const apis: Process[] = [];
  const workers: Process[] = [];
  const endpoints: Endpoint[] = [];
  let created = 0;

  beforeAll(async () => {
    if (!cliBuilt()) throw new Error(`${CLI} is missing: build first with npx tsc -p .`);
    schema = await freshSchema('scale');
    env = { ...SETTINGS, DATABASE_URL: schema.url, SVC_MASTER_KEY: randomBytes(32).toString('hex') };
    // Migrates the schema and makes an organization, its workspaces and their API keys.
    const demo = await runJson(['demo'], env);
    apiKey = demo.workspaces[0].apiKey;
    const started = await Promise.all([
      ...[0, 1].map(async () => {
        const port = await freePort();
        const server = await startServer([], { ...env, PORT: String(port), SVC_WORKERS: '0' });
        return { ...server, url: `http://127.0.0.1:${port}` };
      }),
      ...[0, 1, 2].map(async () => {
        const server = await startCommand(['worker'], { ...env, SVC_METRICS_PORT: String(await freePort()) }, /health and metrics on \S+\n/);
        return { ...server, url: /health and metrics on (\S+)\n/.exec(server.output())![1] };
      }),
    ]);
    apis.push(...started.slice(0, 2));
    workers.push(...started.slice(2));
    for (let i = 0; i < ENDPOINTS; i++) {
      const receiver = await startReceiver(() => ({ status: 200, delayMs: 20 }));
      const res = await request(`${apis[i % 2].url}/v1/webhooks/endpoints`, apiKey, { method: 'POST', body: { url: `${receiver.url}/hooks`, subscribedEvents: ['product.*'] } });
      expect(res.status).toBe(201);
      endpoints.push({ id: res.body.id, secret: res.body.secret, receiver });
    }
  }, 120_000);

  afterAll(async () => {
    for (const p of [...workers, ...apis]) await p.stop();
    for (const e of endpoints) e.receiver.release();
    for (const e of endpoints) await e.receiver.close();
    await schema?.drop();
  });

  /** Creates `count` products, alternately through each API, up to 20 requests at a time. */
  async function createProducts(count: number): Promise<void> {
    for (let i = 0; i < count; i += 20) {
      const batch = Array.from({ length: Math.min(20, count - i) }, (_, j) =>
        request(`${apis[(i + j) % 2].url}/v1/products`, apiKey, { method: 'POST', body: { name: `Hat ${created + i + j}` } }),
      );
      expect((await Promise.all(batch)).map((r) => r.status)).toEqual(batch.map(() => 201));
    }
    created += count;
  }

  /** An endpoint's deliveries as the API lists them (through either API, a page at a time). */
  async function listDeliveries(endpointId: string, via: number): Promise<{ id: string; status: string; attempt: number }[]> {
    const all: { id: string; status: string; attempt: number }[] = [];
    let url: string | null = `${apis[via].url}/v1/webhooks/deliveries?endpointId=${endpointId}&limit=100`;
    while (url) {
      const page = await request(url, apiKey);
      expect(page.status).toBe(200);
      all.push(...page.body.data);
      url = page.body.nextPageUrl;
    }
    return all;
  }

  async function allSucceeded(total: number): Promise<boolean> {
    for (const [i, e] of endpoints.entries()) {
      const rows = await listDeliveries(e.id, i % 2);
      if (rows.length !== total || rows.some((r) => r.status !== 'success')) return false;
    }
    return true;
  }

  /** Requests per webhook-id, each request's signature verified with the endpoint's secret. */
  function receivedCounts(e: Endpoint): Map<string, number> {
    const counts = new Map<string, number>();
    for (const r of e.receiver.requests) {
      expect(() => new Webhook(e.secret).verify(r.body, r.flatHeaders)).not.toThrow();
      counts.set(r.flatHeaders['webhook-id'], (counts.get(r.flatHeaders['webhook-id']) ?? 0) + 1);
    }
    return counts;
  }

  async function metricsOf(worker: Process): Promise<string> {
    return (await fetch(`${worker.url}/metrics`)).text();
  }

  const successes = (metrics: string) => sample(metrics, 'svc_webhook_attempts_total', { outcome: 'success' }) ?? 0;
  const failures = (metrics: string) =>
    ['http_error', 'timeout', 'network_error'].reduce((n, outcome) => n + (sample(metrics, 'svc_webhook_attempts_total', { outcome }) ?? 0), 0);

  it('delivers every event created through either API once per endpoint, spread over all three workers', async () => {
    await createProducts(40);
    await eventually(() => allSucceeded(40), 60_000);

    for (const e of endpoints) {
      const counts = receivedCounts(e);
      expect(new Set(counts.keys())).toEqual(new Set((await listDeliveries(e.id, 0)).map((d) => d.id)));
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
    }
    // Each worker counts the attempts it made: all three made some, and together exactly one per delivery.
    const metrics = await Promise.all(workers.map(metricsOf));
    const made = metrics.map(successes);
    expect(made.every((n) => n > 0), `attempts per worker: ${made.join(', ')}`).toBe(true);
    expect(made.reduce((a, b) => a + b, 0)).toBe(40 * ENDPOINTS);
    expect(metrics.map(failures)).toEqual([0, 0, 0]);
  });

  it('loses nothing when a worker is killed mid-run, and repeats only the requests it had in flight', async () => {
    const before = await Promise.all(workers.map(metricsOf));
    // Receivers now hold every request unanswered, so at the kill nothing in flight has an outcome yet.
    const gateFrom = endpoints.map((e) => e.receiver.requests.length);
    for (const e of endpoints) e.receiver.respond(() => ({ hang: true }));
    await createProducts(20);
    const inFlight = async (w: Process) => sample(await metricsOf(w), 'svc_webhook_attempts_in_flight') ?? 0;
    await eventually(async () => (await Promise.all(workers.map(inFlight))).every((n) => n > 0));
    // A claim holds its row locks for 500 ms at most, then leases the rows still in flight (their
    // next attempt moved a lease ahead of their creation). Once every held request's row is leased,
    // the victim's rows can only come back when their lease runs out.
    const held = () => endpoints.flatMap((e, i) => e.receiver.requests.slice(gateFrom[i]).map((r) => ({ id: r.flatHeaders['webhook-id'], via: i % 2 })));
    const leased = async ({ id, via }: { id: string; via: number }) => {
      const { delivery } = (await request(`${apis[via].url}/v1/webhooks/deliveries/${id}`, apiKey)).body;
      return delivery.status === 'pending' && Date.parse(delivery.nextAttemptAt) - Date.parse(delivery.createdAt) >= LEASE_MS;
    };
    await eventually(async () => (await Promise.all(held().map(leased))).every(Boolean));

    const victim = workers[2];
    const victimAtKill = await metricsOf(victim);
    process.kill(victim.pid, 'SIGKILL');
    await victim.exited;
    // Its sockets closed as it died: the receivers see each of its held requests abandoned. Nothing
    // else ends while they hold, so the in-flight count read just before the kill is a lower bound.
    const abandoned = () => endpoints.flatMap((e) => e.receiver.abandoned);
    const seen = sample(victimAtKill, 'svc_webhook_attempts_in_flight')!;
    await eventually(() => abandoned().length >= seen);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const killed = new Set(abandoned().map((r) => r.flatHeaders['webhook-id']));
    expect(killed.size).toBe(abandoned().length);
    expect(killed.size).toBeGreaterThanOrEqual(Math.max(1, seen));
    // At most its slots' share of each endpoint (a lane's share never exceeds the worker's slots).
    expect(killed.size).toBeLessThanOrEqual(CONCURRENCY * ENDPOINTS);

    for (const e of endpoints) {
      e.receiver.respond(() => ({ status: 200 }));
      e.receiver.release({ status: 200 });
    }
    // The rows it held under row locks come back at once, those under a lease after SVC_LEASE.
    await eventually(() => allSucceeded(60), 60_000);

    let repeated = 0;
    for (const [i, e] of endpoints.entries()) {
      const counts = receivedCounts(e);
      const rows = await listDeliveries(e.id, (i + 1) % 2);
      expect(new Set(counts.keys())).toEqual(new Set(rows.map((d) => d.id)));
      // The killed attempts were never recorded: each delivery shows one attempt, its success.
      expect(rows.every((d) => d.status === 'success' && d.attempt === 1)).toBe(true);
      for (const [id, n] of counts) {
        expect(n, id).toBe(killed.has(id) ? 2 : 1);
        if (n > 1) repeated++;
      }
    }
    expect(repeated).toBe(killed.size);

    // The two survivors sent the rest, the victim's rows among them; one success per delivery overall.
    const after = await Promise.all(workers.slice(0, 2).map(metricsOf));
    expect(after.map((m, i) => successes(m) - successes(before[i])).every((n) => n > 0)).toBe(true);
    expect(successes(victimAtKill)).toBe(successes(before[2]));
    expect(successes(victimAtKill) + after.map(successes).reduce((a, b) => a + b, 0)).toBe(60 * ENDPOINTS);
    expect(after.map(failures)).toEqual([0, 0]);
  });
});
