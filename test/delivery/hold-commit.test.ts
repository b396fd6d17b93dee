import { afterEach, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/db/postgres.js';
import { runAttempt } from '../../src/engine/delivery/attempt.js';
import { createSender } from '../../src/engine/destinations/destinations.js';
import { Hold } from '../../src/engine/delivery/hold.js';
import type { Outcome } from '../../src/engine/delivery/job.js';
import { recordOutcomes } from '../../src/engine/delivery/outcome.js';
import { startTestApp } from '../helpers/app.js';
import { POSTGRES_URL } from '../helpers/db.js';
import { addEndpoint, createProduct, deliveriesOf, eventually } from '../helpers/delivery.js';
import { startReceiver } from '../helpers/receiver.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * A hold's COMMIT whose answer is lost: the connection cut right after the COMMIT left (a network
 * fault, a proxy restarting). The hold cannot know whether it committed; the outcome of a job it
 * had in flight must be written either way, or the row is sent again a lease later.
 */
describe('a hold whose commit answer is lost', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  /**
   * A hold with one job in flight, ended while the proxy cuts every connection at its COMMIT, which
   * reaches the server first with `deliverCommit`. `answer()` brings the job's attempt in afterwards.
   */
  async function endedAtCommit(deliverCommit: boolean) {
    const t = await startTestApp({ config: { allowPrivateTargets: true } });
    cleanup.push(() => t.close());
    const receiver = await startReceiver(() => ({ status: 200 }));
    cleanup.push(() => receiver.close());
    const { id: endpointId } = await addEndpoint(t, receiver.url);
    await createProduct(t, 'Hat');
    const proxy = new TcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
    await proxy.start();
    cleanup.push(() => proxy.stop());
    const url = new URL(POSTGRES_URL);
    url.host = `127.0.0.1:${proxy.port}`;
    const db = await openPostgres({ url: url.toString(), schema: t.testDb.schema, timeouts: { connectMs: 1_000, statementMs: 1_000, queryMs: 1_500, keepAliveMs: 1_000 } });
    cleanup.push(() => db.close());
    const sender = createSender(t.ctx.config);
    cleanup.push(() => sender.close());
    const recorded: Outcome[] = [];
    const errors: unknown[] = [];
    const handlers = { unstarted: () => [], record: (o: Outcome[]) => void recorded.push(...o), ended: () => {}, onError: (e: unknown) => void errors.push(e) };
    const { hold, jobs } = await Hold.claim({ db, clock: t.clock, leaseMs: t.ctx.config.leaseMs }, handlers, t.clock.now(), 10, null);
    if (!hold) throw new Error('nothing was due');
    const [job] = jobs;
    const cut = proxy.cutAt('COMMIT', deliverCommit);
    await hold.end();
    await cut;
    const answer = async () => hold.finish(job, await runAttempt({ ...t.ctx, sender }, job));
    const row = async () => (await deliveriesOf(t, endpointId))[0];
    return { t, job, recorded, errors, answer, row };
  }

  it('committed after all: the answer that comes later is written under the lease, and nothing is sent again', async () => {
    const { t, job, recorded, errors, answer, row } = await endedAtCommit(true);
    expect(errors).toHaveLength(1);
    // The server carries out the COMMIT it read: the row holds the lease the hold gave it.
    await eventually(async () => (await row()).next_attempt_at!.getTime() > job.mark.getTime());

    await answer();
    expect(recorded).toHaveLength(1);
    await recordOutcomes(t.ctx, recorded);
    expect(await row()).toMatchObject({ status: 'success', attempt: 1 });
  });

  it('not committed: the answer is written under the row\'s due time', async () => {
    const { t, job, recorded, errors, answer, row } = await endedAtCommit(false);
    expect(errors).toHaveLength(1);
    // The server never read the COMMIT: the transaction ends with its connection, the row as it was.
    await eventually(async () => (await row()).next_attempt_at!.getTime() === job.mark.getTime());

    await answer();
    await recordOutcomes(t.ctx, recorded);
    expect(await row()).toMatchObject({ status: 'success', attempt: 1 });
  });
});
