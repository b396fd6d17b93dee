import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestApp } from './helpers/app.js';
import { cliBuilt, startCommand } from './helpers/cli.js';
import { proxiedDatabase } from './helpers/db.js';
import { addEndpoint, createProduct, eventually } from './helpers/delivery.js';
import { startReceiver } from './helpers/receiver.js';

/**
 * `svc worker` through a database outage: the outage is two lines, when it begins and when it ends,
 * whatever its jobs (claims, outcome writes, background jobs) met meanwhile; and it delivers again
 * after it.
 */
describe.skipIf(!cliBuilt())('svc worker during a database outage', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('logs the outage once when it begins and once when it ends, and delivers after it', async () => {
    const masterKey = randomBytes(32);
    const t = await startTestApp({ masterKey, config: { allowPrivateTargets: true } });
    cleanup.push(() => t.close());
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    await addEndpoint(t, receiver.url);
    const { proxy, url } = await proxiedDatabase(t.testDb.schema);
    cleanup.push(() => proxy.stop());
    const worker = await startCommand(
      ['worker'],
      { DATABASE_URL: url, SVC_MASTER_KEY: masterKey.toString('hex'), SVC_ALLOW_PRIVATE_TARGETS: 'true', SVC_POLL_INTERVAL: '200ms' },
      /delivering with \d+ worker/,
    );
    cleanup.push(async () => void (await worker.stop()));
    await createProduct(t, 'before');
    await receiver.waitFor(1, 15_000);

    proxy.setMode('reset');
    await eventually(() => /database down/.test(worker.errors()), 15_000);
    // Products created meanwhile wait in the table for the worker.
    await createProduct(t, 'during');
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    proxy.setMode('pass');
    await receiver.waitFor(2, 20_000);
    await eventually(() => /database up again/.test(worker.errors()), 10_000);

    const lines = worker.errors().split('\n').filter(Boolean);
    expect(lines.filter((line) => line.includes('database down'))).toHaveLength(1);
    expect(lines.filter((line) => line.includes('database up again'))).toHaveLength(1);
    expect(lines.filter((line) => / failed/.test(line))).toEqual([]);
  }, 90_000);
});
