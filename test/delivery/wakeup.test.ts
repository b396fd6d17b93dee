import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/db/postgres.js';
import { createContext } from '../../src/runtime.js';
import { DeliveryWorker } from '../../src/webhooks/engine/worker.js';
import { testConfig, type TestApp } from '../helpers/app.js';
import { ENGINE, POSTGRES_URL } from '../helpers/db.js';
import { addEndpoint, closeAppAndReceiver, createProduct, eventually, openAppAndReceiver } from '../helpers/delivery.js';
import type { Receiver } from '../helpers/receiver.js';

// Polling is set to an hour: a delivery that arrives proves a wake-up, not a poll.
const NO_POLL = { allowPrivateTargets: true, pollIntervalMs: 3_600_000 };

describe('waking workers after a product write', () => {
  const masterKey = randomBytes(32);
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => ({ t, receiver } = await openAppAndReceiver({ config: NO_POLL, masterKey })));
  afterAll(() => closeAppAndReceiver(t, receiver));

  it('wakes a worker of the same process directly', async () => {
    await addEndpoint(t, receiver.url);
    const worker = new DeliveryWorker(t.ctx);
    await worker.start();
    try {
      await createProduct(t, 'Local');
      await eventually(() => receiver.requests.length === 1);
    } finally {
      await worker.stop();
    }
  });

  // Another process is another connection: only NOTIFY through the server can reach it.
  it.skipIf(ENGINE === 'pglite')('wakes a worker of another process through NOTIFY (PostgreSQL)', async () => {
    const db = await openPostgres({ url: POSTGRES_URL, schema: t.testDb.schema!, poolSize: 2 });
    const other = createContext(testConfig(NO_POLL), db, masterKey);
    const worker = new DeliveryWorker(other);
    await worker.start();
    try {
      const before = receiver.requests.length;
      await createProduct(t, 'Remote');
      await eventually(() => receiver.requests.length === before + 1);
      expect(JSON.parse(receiver.requests.at(-1)!.body).type).toBe('product.created');
    } finally {
      await worker.stop();
      await other.rateLimits.close();
      await db.close();
    }
  });
});
