import { afterEach, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/db/postgres.js';
import { OutcomeRecorder } from '../../src/engine/delivery/recorder.js';
import { startTestApp } from '../helpers/app.js';
import { POSTGRES_URL } from '../helpers/db.js';
import { addEndpoint, createProduct, deliveriesOf, eventually } from '../helpers/delivery.js';
import { successOf } from '../helpers/outcomes.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

const QUERY_MS = 600;

/**
 * A stop while a failed write is being tried again. The recorder tries a failed batch again off its
 * writers, on a timer; a stop that began while such a try was under way must wait for it too, or the
 * process exits with the outcome unwritten and the delivery is sent again a lease later.
 */
describe('the outcome recorder at a stop', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('waits for a batch being tried again when the stop began, and writes it once the database answers', async () => {
    const t = await startTestApp();
    cleanup.push(() => t.close());
    const { id: endpointId } = await addEndpoint(t, 'https://receiver.example/hook');
    await createProduct(t, 'Hat');
    const [row] = await deliveriesOf(t, endpointId);

    const proxy = new TcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
    await proxy.start();
    cleanup.push(() => proxy.stop());
    const url = new URL(POSTGRES_URL);
    url.host = `127.0.0.1:${proxy.port}`;
    const db = await openPostgres({ url: url.toString(), schema: t.testDb.schema, timeouts: { connectMs: 500, statementMs: 500, queryMs: QUERY_MS, keepAliveMs: 500 } });
    cleanup.push(() => db.close());
    const failures: unknown[] = [];
    let gaveUp = 0;
    const recorder = new OutcomeRecorder(
      { db, clock: t.clock, outbox: t.ctx.outbox },
      { writers: 1, retryForMs: 60_000, onError: (error) => void failures.push(error), written: () => {}, gaveUp: () => void gaveUp++ },
    );

    // The first write hangs in the outage and fails; its batch is tried again on a timer, and that
    // try hangs in turn.
    proxy.setMode('blackhole');
    recorder.add([successOf({ id: row.id, attempt: row.attempt, next_attempt_at: row.next_attempt_at! }, endpointId, t.clock.now())]);
    await eventually(async () => failures.length >= 1, 5_000);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(recorder.lag()).toBe(1);

    // The stop begins while that try is under way; the database comes back a moment later.
    const stopped = recorder.flush(true, performance.now() + 10_000).then(() => true);
    await new Promise((resolve) => setTimeout(resolve, 100));
    proxy.setMode('pass');
    await stopped;

    expect(gaveUp).toBe(0);
    expect(recorder.lag()).toBe(0);
    expect((await deliveriesOf(t, endpointId))[0]).toMatchObject({ status: 'success', attempt: 1 });
  });
});
