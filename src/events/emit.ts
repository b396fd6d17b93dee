import type { Queryable } from '../db/db.js';
import { fanOut, fanOutCtes, fanOutValues, singleEvent } from '../webhooks/fanout.js';
import { INSERT_EVENT_COLUMNS, buildEvent, eventValues, insertEvent, type EventInput, type StoredEvent } from './store.js';

/**
 * Records an event inside the caller's transaction. Everything that reacts to events (webhook
 * fan-out) is written in the same transaction, so a rolled-back change leaves no trace.
 */
export async function emitEvent(q: Queryable, input: EventInput): Promise<StoredEvent> {
  const event = await insertEvent(q, input);
  await fanOut(q, event);
  return event;
}

/**
 * A change, its event and the event's deliveries as ONE statement: the mutation (an INSERT, UPDATE
 * or DELETE ... RETURNING, with parameters $1..$n) is a CTE, the event is inserted only if the
 * mutation returned a row, and the fan-out follows it. One statement is atomic on its own, so the
 * whole write costs one round trip and no BEGIN/COMMIT, with the outbox guarantee intact.
 */
export async function mutateAndEmit<Row>(
  q: Queryable,
  mutation: { sql: string; params: unknown[] },
  input: EventInput,
  /** Given for a statement run on its own (committed when it returns): wakes workers after it. */
  wake?: () => void,
): Promise<Row[]> {
  const event = buildEvent(input);
  const base = mutation.params.length;
  const e = (i: number) => `$${base + i}`;
  const f = (i: number) => `$${base + 7 + i}`;
  const sql = `WITH mutated AS (${mutation.sql}),
     event AS (
       ${INSERT_EVENT_COLUMNS}
       SELECT ${e(1)}, ${e(2)}, ${e(3)}, ${e(4)}, ${e(5)}, ${e(6)}, ${e(7)}::timestamptz WHERE EXISTS (SELECT 1 FROM mutated)
       RETURNING id
     ), ${fanOutCtes(singleEvent(f, 'event'), wake === undefined)}
     SELECT mutated.*, (SELECT pending FROM fanout) AS fanout_pending FROM mutated`;
  const rows = await q.query<Row & { fanout_pending: number }>(sql, [...mutation.params, ...eventValues(event), ...fanOutValues(event)]);
  if (wake && rows[0]?.fanout_pending > 0) wake();
  return rows;
}
