import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/db/postgres.js';
import { createContext } from '../../src/server/runtime.js';
import { newId } from '../../src/lib/ids.js';
import { DeliveryWorker } from '../../src/engine/delivery/worker.js';
import { testConfig, type TestApp } from '../helpers/app.js';
import { POSTGRES_URL } from '../helpers/db.js';
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
  it('wakes a worker of another process through NOTIFY', async () => {
    const db = await openPostgres({ url: POSTGRES_URL, schema: t.testDb.schema, poolSize: 2 });
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

describe('waking a busy worker for rows due later', () => {
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    ({ t, receiver } = await openAppAndReceiver({ config: NO_POLL }));
    receiver.respond((request) => (request.url.includes('hang') ? { hang: true } : { status: 200 }));
  });
  afterAll(() => closeAppAndReceiver(t, receiver));

  // A worker with an attempt in flight is never idle, so only its wake-up timer brings it back for
  // rows that come due later. The timer keeps one time, the earliest: the claim it starts must
  // look up the time after it, though that claim took rows.
  it('claims rows due at two later times while an attempt hangs', async () => {
    const { id: hanging } = await addEndpoint(t, `${receiver.url}?hang`);
    const worker = new DeliveryWorker(t.ctx);
    await worker.start();
    try {
      await createProduct(t, 'Held up');
      await eventually(() => receiver.requests.length === 1);
      const [event] = await t.ctx.db.query<{ id: string }>(
        'SELECT event_id AS id FROM webhook_deliveries WHERE endpoint_id = $1',
        [hanging],
      );
      const { id: healthy } = await addEndpoint(t, receiver.url);
      const now = Date.now();
      const due = [now + 300, now + 700, now + 1100];
      for (const at of due) {
        await t.ctx.db.query(
          `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, attempt, next_attempt_at, created_at)
           VALUES ($1, $2, $3, $4, 'product.created', 'pending', 0, $5, $6)`,
          [newId('whd'), t.demo.workspaces[0].id, healthy, event.id, new Date(at), new Date(now)],
        );
      }
      // The claim this starts finds nothing due and sets the timer for the first row.
      worker.wake();
      await eventually(() => receiver.requests.length === 1 + due.length, 5_000);
      expect(receiver.requests.slice(1).every((r) => !r.url.includes('hang'))).toBe(true);
    } finally {
      receiver.release({ status: 200 });
      await worker.stop();
    }
  });
});
