import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestApp } from './helpers/app.js';
import { cliBuilt, freePort, startServer } from './helpers/cli.js';
import { proxiedDatabase } from './helpers/db.js';
import { addEndpoint, createProduct, testWorker } from './helpers/delivery.js';
import { startReceiver } from './helpers/receiver.js';

const DELIVERY_TIMEOUT_MS = 2_000;
const QUERY_TIMEOUT_MS = 1_500;
/** The documented bound of a stop: the delivery time-out, the query time-out and 5 s (docs/operations.md). */
const STOP_MS = DELIVERY_TIMEOUT_MS + QUERY_TIMEOUT_MS + 5_000;
const LEASE_MS = 5_000;

/**
 * `svc serve` stopped by SIGTERM while its database is blackholed (a TCP proxy between it and the
 * shared PostgreSQL), under a steady load of product creations and with deliveries in flight.
 */
describe.skipIf(!cliBuilt())('SIGTERM during a database outage', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  /**
   * Starts the service behind the proxy with deliveries in flight and 20 clients creating products,
   * cuts the database, and stops it; with `comesBack`, the database comes back 2 s into the stop.
   */
  async function stopInOutage(comesBack: boolean) {
    const masterKey = randomBytes(32);
    const t = await startTestApp({ masterKey, config: { allowPrivateTargets: true } });
    cleanup.push(() => t.close());
    // Each delivery takes a second to answer: some are in flight at the cut.
    const receiver = await startReceiver(() => ({ status: 200, delayMs: 1_000 }));
    cleanup.push(() => receiver.close());
    await addEndpoint(t, receiver.url);
    const { proxy, url } = await proxiedDatabase(t.testDb.schema);
    cleanup.push(() => proxy.stop());
    const port = await freePort();
    const server = await startServer([], {
      DATABASE_URL: url,
      SVC_MASTER_KEY: masterKey.toString('hex'),
      PORT: String(port),
      SVC_ALLOW_PRIVATE_TARGETS: 'true',
      SVC_DB_CONNECT_TIMEOUT: '1s',
      SVC_DB_STATEMENT_TIMEOUT: '1s',
      SVC_DB_QUERY_TIMEOUT: `${QUERY_TIMEOUT_MS}ms`,
      SVC_DELIVERY_TIMEOUT: `${DELIVERY_TIMEOUT_MS}ms`,
      SVC_LEASE: `${LEASE_MS}ms`,
      SVC_RATE_LIMIT_API_KEY: '1000000',
      LOG_LEVEL: 'silent',
    });
    cleanup.push(async () => void (await server.stop()));
    const apiKey = t.demo.workspaces[0].apiKey;

    // Load: 20 clients creating products back to back, each request's fate kept.
    const answers: number[] = [];
    const unanswered: string[] = [];
    let loading = true;
    let n = 0;
    const client = async () => {
      while (loading) {
        try {
          // A connection per request: a request sent on a kept-alive connection just as the
          // server closes it would be reset by any server, before it was ever read.
          const res = await request(`http://127.0.0.1:${port}/v1/products`, {
            method: 'POST',
            headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
            body: JSON.stringify({ name: `load ${n++}` }),
            reset: true,
          });
          await res.body.arrayBuffer();
          answers.push(res.statusCode);
        } catch (error) {
          const code = (error as { code?: string }).code;
          // Refused: the server no longer listens, so the request never began. Reset before any
          // byte of an answer: the connection was queued for the listener, or accepted and not yet
          // read, when the listener closed; a request the server has begun is awaited by the stop
          // and answered, and one it dropped would show as any other error below.
          if (code === 'ECONNREFUSED' || code === 'ECONNRESET') break;
          unanswered.push(String(code ?? error));
          break;
        }
      }
    };
    const clients = Array.from({ length: 20 }, () => client());
    await receiver.waitFor(3, 10_000);

    proxy.setMode('blackhole');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const started = performance.now();
    const stopping = server.stop();
    if (comesBack) {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      proxy.setMode('pass');
    }
    const code = await stopping;
    const stopMs = performance.now() - started;
    loading = false;
    await Promise.all(clients);

    expect(code).toBe(0);
    expect(stopMs).toBeLessThan(STOP_MS);
    expect(unanswered).toEqual([]);
    expect(answers.filter((s) => s !== 201 && s !== 503)).toEqual([]);
    expect(answers).toContain(503);
    return { t, receiver };
  }

  it('exits 0 within the stop time and answers every request in progress while the database stays away', async () => {
    await stopInOutage(false);
  }, 90_000);

  it('records what its workers sent when the database comes back during the stop: a lease later nothing is sent twice', async () => {
    const { t, receiver } = await stopInOutage(true);
    // A lease later, with a healthy worker: no delivery that was sent is sent again.
    const sentBefore = receiver.requests.length;
    const worker = testWorker(t);
    await worker.start();
    cleanup.push(() => worker.stop());
    await createProduct(t, 'after the stop');
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 2_000));
    const ids = receiver.requests.map((r) => r.flatHeaders['webhook-id']);
    const repeated = ids.filter((id, i) => ids.indexOf(id) !== i);
    expect(receiver.requests.length).toBeGreaterThan(sentBefore);
    expect(repeated).toEqual([]);
  }, 90_000);
});
