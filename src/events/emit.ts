import type { Queryable } from '../db/db.js';
import { fanOut, fanOutCtes, fanOutValues, handOffValues, singleEvent } from '../webhooks/fanout.js';
import type { DeliveryNotifier, FanOutResult } from '../webhooks/notifier.js';
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
 *
 * Given the `notifier`, the statement runs on its own (committed when it returns): its deliveries are
 * handed to this process's workers or wake workers after it. Without one it is part of the caller's
 * transaction and NOTIFYs at commit.
 */
export async function mutateAndEmit<Row>(
  q: Queryable,
  mutation: { sql: string; params: unknown[] },
  input: EventInput,
  notifier?: DeliveryNotifier,
): Promise<Row[]> {
  const event = buildEvent(input);
  const handOff = notifier?.handOff(1) ?? null;
  const base = mutation.params.length;
  const e = (i: number) => `$${base + i}`;
  const f = (i: number) => `$${base + 7 + i}`;
  const standalone = notifier !== undefined;
  const sql = `WITH mutated AS (${mutation.sql}),
     event AS (
       ${INSERT_EVENT_COLUMNS}
       SELECT ${e(1)}, ${e(2)}, ${e(3)}, ${e(4)}, ${e(5)}, ${e(6)}, ${e(7)}::timestamptz WHERE EXISTS (SELECT 1 FROM mutated)
       RETURNING id
     ), ${fanOutCtes(singleEvent(f, 'event', standalone), !standalone, standalone)}
     SELECT mutated.*, CASE WHEN row_number() OVER () = 1 THEN (SELECT row_to_json(fanout) FROM fanout) END AS fanout FROM mutated`;
  const params = [...mutation.params, ...eventValues(event), ...fanOutValues(event), ...(standalone ? handOffValues(handOff) : [])];
  let rows: (Row & { fanout: FanOutResult | null })[];
  try {
    rows = await q.query<Row & { fanout: FanOutResult | null }>(sql, params);
  } catch (error) {
    handOff?.cancel();
    throw error;
  }
  notifier?.committed(handOff, rows.length > 0 ? 1 : 0, rows[0]?.fanout ?? undefined, () => event.body);
  return rows.map(({ fanout: _, ...row }) => row as Row);
}
