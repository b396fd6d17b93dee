import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import type { TestApp } from '../helpers/app.js';
import { addEndpoint, closeAppAndReceiver, createProduct, deliveriesOf, openAppAndReceiver, testWorker } from '../helpers/delivery.js';
import type { Receiver } from '../helpers/receiver.js';

/**
 * A delivery row's mark is its next_attempt_at (job.ts), which the service writes in whole
 * milliseconds. Rows written by other means (a data migration, a seed using now()) carry
 * microseconds; their outcomes must still be written, once, or they are sent again at every claim.
 */
describe('rows due at a time finer than a millisecond', () => {
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => ({ t, receiver } = await openAppAndReceiver({ config: { allowPrivateTargets: true } })));
  afterAll(() => closeAppAndReceiver(t, receiver));

  it('records the outcome of a row whose next_attempt_at has microseconds, and sends it once', async () => {
    const { id: endpointId } = await addEndpoint(t, receiver.url, ['product.*']);
    const worker = testWorker(t);
    try {
      await createProduct(t, 'Seeded');
      expect(await worker.runDue()).toBe(1);
      const [{ event_id: eventId }] = await deliveriesOf(t, endpointId);
      const ids = [newId('whd'), newId('whd')];
      for (const [i, id] of ids.entries()) {
        await t.ctx.db.query(
          `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, attempt, next_attempt_at, created_at)
           VALUES ($1, $2, $3, $4, 'product.created', 'pending', 0, $5::timestamptz - interval '1 second' + interval '417 microseconds' * $6, $5)`,
          [id, t.demo.workspaces[0].id, endpointId, eventId, t.ctx.clock.now(), i + 1],
        );
      }
      const before = receiver.requests.length;
      expect(await worker.runDue()).toBe(2);
      expect(await worker.runDue()).toBe(0);
      const rows = (await deliveriesOf(t, endpointId)).filter((r) => ids.includes(r.id));
      expect(rows.map((r) => [r.status, r.attempt])).toEqual([['success', 1], ['success', 1]]);
      expect(receiver.requests.slice(before).map((r) => r.flatHeaders['webhook-id']).sort()).toEqual([...ids].sort());
    } finally {
      await worker.stop();
    }
  });
});
