import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { GATHER_MS, OutcomeRecorder } from '../../src/engine/delivery/recorder.js';
import { startTestApp } from '../helpers/app.js';
import { addEndpoint, createProduct, deliveriesOf, eventually, recordStatements } from '../helpers/delivery.js';
import { successOf } from '../helpers/outcomes.js';

/**
 * Outcomes of deliveries that arrived one after another, each in a turn of the event loop of its
 * own (a moderate load: a response every few milliseconds), are written together once the first has
 * waited GATHER_MS, not one statement per turn.
 */
describe('the outcome recorder', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  async function setup(count: number) {
    const t = await startTestApp();
    cleanup.push(() => t.close());
    const { id: endpointId } = await addEndpoint(t, 'https://receiver.example/hook');
    for (let i = 0; i < count; i++) await createProduct(t, `Hat ${i}`);
    const rows = await deliveriesOf(t, endpointId);
    const log = recordStatements(t);
    // The outcome writes among them (outcome.ts), not the test's own reads.
    const statements = () => log.filter((s) => /UPDATE webhook_deliveries d SET/.test(s.sql)).length;
    const errors: unknown[] = [];
    const recorder = new OutcomeRecorder(
      { db: t.ctx.db, clock: t.clock, outbox: t.ctx.outbox },
      { writers: 2, retryForMs: 1_000, onError: (error) => void errors.push(error), written: () => {}, gaveUp: () => {} },
    );
    const outcomeOf = (row: (typeof rows)[number]) => successOf({ id: row.id, attempt: row.attempt, next_attempt_at: row.next_attempt_at! }, endpointId, t.clock.now());
    return { t, endpointId, rows, recorder, statements, outcomeOf, errors };
  }

  it('writes outcomes that arrive over several turns of the event loop in one statement', async () => {
    const { t, endpointId, rows, recorder, statements, outcomeOf, errors } = await setup(5);
    for (const row of rows) {
      recorder.add([outcomeOf(row)]);
      await nextTurn();
    }
    // Not written yet, but not waiting on the database either: claims and hand-offs go on.
    expect([recorder.lag(), recorder.behind()]).toEqual([5, 0]);
    await eventually(async () => recorder.lag() === 0, 2_000);
    expect([statements(), errors]).toEqual([1, []]);
    expect((await deliveriesOf(t, endpointId)).map((r) => r.status)).toEqual(['success', 'success', 'success', 'success', 'success']);
  });

  it('writes what waits at once when the worker stops, and nothing more after', async () => {
    const { t, endpointId, rows, recorder, statements, outcomeOf, errors } = await setup(2);
    recorder.add(rows.map(outcomeOf));
    await recorder.flush(true);
    expect(recorder.lag()).toBe(0);
    expect((await deliveriesOf(t, endpointId)).map((r) => r.status)).toEqual(['success', 'success']);
    // The gathering timer was cleared by the stop's write: no second statement follows it.
    await new Promise((resolve) => setTimeout(resolve, 3 * GATHER_MS));
    expect([statements(), errors]).toEqual([1, []]);
  });
});
