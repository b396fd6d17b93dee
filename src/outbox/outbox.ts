import { channelSql } from '../db/channels.js';
import type { Db, Queryable } from '../db/db.js';
import { subscriptionPatterns } from '../events/patterns.js';
import { buildEvent, type EventInput, type StoredEvent } from '../events/store.js';
import { idTimePrefix, newId } from '../lib/ids.js';
import { toIso } from '../lib/iso.js';
import { DELIVERY_CHANNEL } from '../webhooks/engine/wakeups.js';
import { EVENT_CHANNEL, eventWakePayload } from '../events/channel.js';
import type { Sequencer } from '../events/sequencer.js';
import { ORDERING_SEQ, fanOut, fanOutCtes, fanOutValues, handOffValues, singleEvent } from './fanout.js';
import type { DeliveryNotifier, FanOutResult, HandOff } from './notifier.js';

/**
 * The outbox: the one writer of events and deliveries. A change, its event and the event's
 * deliveries are written together, so an event is never lost and never sent for a change that was
 * rolled back; products, orders, auto-disables, test pings, replays and recoveries all write through
 * here, and no other module inserts into `events` or `webhook_deliveries` (a test holds to that).
 */

const INSERT_EVENT = 'INSERT INTO events (id, workspace_id, type, subject_type, subject_id, body, created_at, batch_id)';

/**
 * The batch of a write's events in one workspace: the unit the sequencer gives a position once the
 * write has committed (events/sequencer.ts).
 */
const INSERT_BATCH = 'INSERT INTO event_batches (id, workspace_id, event_ids)';

/** The columns of an events row, in the order of INSERT_EVENT; the event is a batch of its own. */
function eventValues(event: StoredEvent, batchId: string): unknown[] {
  return [event.id, event.workspaceId, event.type, event.subject?.type ?? null, event.subject?.id ?? null, event.body, event.createdAt, batchId];
}

/**
 * A change as SQL: a data-modifying statement with RETURNING whose parameters are $1..$n, and, in
 * `before`, CTEs it needs ahead of it (a data-modifying statement cannot hold a WITH of its own
 * inside another WITH): `name AS (...), other AS (...)`.
 */
export interface Mutation {
  sql: string;
  params: unknown[];
  before?: string;
}

/**
 * Wakes the sequencer of every process, this one's too, when the caller's transaction commits
 * (events/channel.ts), so that its batches get their positions. The writes inside a transaction do
 * this; standalone ones wake their own process's sequencer after their statement.
 */
async function wakeStreamsAtCommit(q: Queryable, workspaceIds: string[]): Promise<void> {
  if (workspaceIds.length > 0) await q.query(`SELECT pg_notify(${channelSql(EVENT_CHANNEL)}, $1)`, [eventWakePayload('', new Set(workspaceIds))]);
}

/** Records an event inside the caller's transaction, with its deliveries; workers and sequencers are NOTIFYed at commit. */
export async function recordEvent(q: Queryable, input: EventInput): Promise<StoredEvent> {
  const event = buildEvent(input);
  const batchId = newId('evb', event.createdAt);
  await q.query(
    `WITH event AS (${INSERT_EVENT} VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id) ${INSERT_BATCH} SELECT $8, $2, ARRAY[id] FROM event`,
    eventValues(event, batchId),
  );
  await fanOut(q, event);
  await wakeStreamsAtCommit(q, [event.workspaceId]);
  return event;
}

/** A delivery whose body is not an event of the log: a test ping, a replay, a recovery's replay. */
export interface DirectDelivery {
  workspaceId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  payload: string;
  replayOf: string | null;
  /** The subject id when the endpoint orders by subject (ordering_key, fanout.ts); null or absent otherwise. */
  orderingKey?: string | null;
}

/**
 * Queues deliveries with their own payload inside the caller's transaction: pending, due now,
 * attempt 0. Workers are NOTIFYed when the transaction commits. Returns their ids, in order.
 */
export async function enqueueDeliveries(q: Queryable, deliveries: DirectDelivery[], now: Date): Promise<string[]> {
  if (deliveries.length === 0) return [];
  const ids = deliveries.map(() => newId('whd', now));
  await q.query(
    `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, payload, replay_of, ordering_key, ordering_seq, status,
                                     attempt, next_attempt_at, created_at)
     SELECT t.id, t.workspace_id, t.endpoint_id, t.event_id, t.event_type, t.payload, t.replay_of, t.ordering_key, ${ORDERING_SEQ}, 'pending', 0, $8, $8
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $9::text[])
         AS t (id, workspace_id, endpoint_id, event_id, event_type, payload, replay_of, ordering_key)`,
    [
      ids,
      deliveries.map((d) => d.workspaceId),
      deliveries.map((d) => d.endpointId),
      deliveries.map((d) => d.eventId),
      deliveries.map((d) => d.eventType),
      deliveries.map((d) => d.payload),
      deliveries.map((d) => d.replayOf),
      now,
      deliveries.map((d) => d.orderingKey ?? null),
    ],
  );
  await q.query(`SELECT pg_notify(${channelSql(DELIVERY_CHANNEL)}, '')`);
  return ids;
}

/** The event fields of one input row of Outbox.changeMany. */
export interface EventFields {
  event_id: string;
  workspace_id: string;
  event_type: string;
  subject_type: string | null;
  subject_id: string | null;
  event_body: string;
  at: string;
  delivery_prefix: string;
  patterns: string[];
  /** The batch of the write's events in this workspace (set by batchRows). */
  batch_id?: string;
}

const EVENT_FIELD_COLUMNS =
  'event_id text, workspace_id text, event_type text, subject_type text, subject_id text, event_body text, at timestamptz, delivery_prefix text, patterns text[], batch_id text';

/** The rows with the batch of their workspace: one per workspace the write touches. */
function batchRows<Row extends EventFields>(rows: Row[]): Row[] {
  const batches = new Map<string, string>();
  for (const row of rows) {
    let batch = batches.get(row.workspace_id);
    if (batch === undefined) batches.set(row.workspace_id, (batch = newId('evb', new Date(row.at))));
    row.batch_id = batch;
  }
  return rows;
}

/** An event's fields for an input row of changeMany, the event built (its id and text) once here. */
export function eventFields(input: EventInput): { event: StoredEvent; fields: EventFields } {
  const event = buildEvent(input);
  return {
    event,
    fields: {
      event_id: event.id,
      workspace_id: event.workspaceId,
      event_type: event.type,
      subject_type: event.subject?.type ?? null,
      subject_id: event.subject?.id ?? null,
      event_body: event.body,
      at: toIso(event.createdAt),
      delivery_prefix: idTimePrefix('whd', event.createdAt),
      patterns: subscriptionPatterns(event.type),
    },
  };
}

/** Many changes with an event each, as one statement (see Outbox.changeMany). */
export interface Batch<Input> {
  /** Columns of the input rows besides the event's, as jsonb_to_recordset takes them: `id text, name text, ...`. */
  columns: string;
  /** A data-modifying statement reading the CTE `input` (one row per change), with RETURNING. */
  mutation: string;
  rows: (Input & EventFields)[];
}

type WithFanOut<Row> = Row & { fanout: FanOutResult | null };

/**
 * A change, its event and the event's deliveries as ONE statement: the mutation is a CTE, the event
 * is inserted only if the mutation returned a row, and the fan-out follows it. One statement is
 * atomic on its own, so the whole write costs one round trip and no BEGIN/COMMIT. With `standalone`
 * it hands deliveries over (its last two parameters are the lease and the slots, handOffValues);
 * otherwise it is part of a transaction and NOTIFYs at its commit.
 */
function changeStatement(mutation: Mutation, event: StoredEvent, standalone: boolean): string {
  const base = mutation.params.length;
  const e = (i: number) => `$${base + i}`;
  const f = (i: number) => `$${base + 8 + i}`;
  return `WITH ${mutation.before ? `${mutation.before}, ` : ''}mutated AS (${mutation.sql}),
     event AS (
       ${INSERT_EVENT}
       SELECT ${e(1)}, ${e(2)}, ${e(3)}, ${e(4)}, ${e(5)}, ${e(6)}, ${e(7)}::timestamptz, ${e(8)} WHERE EXISTS (SELECT 1 FROM mutated)
       RETURNING id
     ), batched AS (
       ${INSERT_BATCH} SELECT ${e(8)}, ${e(2)}, ARRAY[id] FROM event
     ), ${fanOutCtes(singleEvent(f, 'event', standalone), !standalone, standalone)}
     SELECT mutated.*, CASE WHEN row_number() OVER () = 1 THEN (SELECT row_to_json(fanout) FROM fanout) END AS fanout FROM mutated`;
}

/**
 * Many changes, each with its own event, in one statement: `input` holds one row per change with
 * its event's fields (eventFields), the mutation reads it, and every event is logged and fanned out.
 * Hand-off and NOTIFY as for changeStatement ($2 and $3 are the lease and the slots).
 */
function changeManyStatement(batch: Batch<unknown>, standalone: boolean): string {
  const lease = standalone ? ', $2::timestamptz AS lease, $3::int AS slots' : '';
  return `WITH input AS MATERIALIZED (
       SELECT * FROM jsonb_to_recordset($1::jsonb) AS i (${EVENT_FIELD_COLUMNS}, ${batch.columns})
     ), mutated AS (${batch.mutation}),
     logged AS (
       ${INSERT_EVENT}
       SELECT event_id, workspace_id, event_type, subject_type, subject_id, event_body, at, batch_id FROM input
     ), batched AS (
       ${INSERT_BATCH} SELECT batch_id, workspace_id, array_agg(event_id ORDER BY event_id) FROM input GROUP BY batch_id, workspace_id
     ), ${fanOutCtes(`(SELECT workspace_id, event_id, event_type, at, delivery_prefix, patterns, subject_id${lease} FROM input)`, !standalone, standalone)}
     SELECT mutated.*, CASE WHEN row_number() OVER () = 1 THEN (SELECT row_to_json(fanout) FROM fanout) END AS fanout FROM mutated`;
}

const withoutFanOut = <Row>(rows: WithFanOut<Row>[]): Row[] => rows.map(({ fanout: _, ...row }) => row as Row);

/** A change with its event, inside the caller's transaction (NOTIFY at its commit). */
export async function changeIn<Row>(q: Queryable, mutation: Mutation, input: EventInput): Promise<Row[]> {
  const event = buildEvent(input);
  const rows = await q.query<WithFanOut<Row>>(changeStatement(mutation, event, false), [
    ...mutation.params,
    ...eventValues(event, newId('evb', event.createdAt)),
    ...fanOutValues(event),
  ]);
  await wakeStreamsAtCommit(q, rows.length > 0 ? [event.workspaceId] : []);
  return withoutFanOut(rows);
}

/** Many changes with an event each, inside the caller's transaction (NOTIFY at its commit). */
export async function changeManyIn<Row, Input>(q: Queryable, batch: Batch<Input>): Promise<Row[]> {
  const rows = await q.query<WithFanOut<Row>>(changeManyStatement(batch, false), [JSON.stringify(batchRows(batch.rows))]);
  await wakeStreamsAtCommit(q, batch.rows.map((r) => r.workspace_id));
  return withoutFanOut(rows);
}

/**
 * The standalone writes: each a statement of its own, committed when it returns, whose deliveries
 * are handed to this process's workers (notifier.ts) or wake workers after it, and whose events
 * wake this process's sequencer (events/sequencer.ts). Inside a request's transaction
 * (db/scope.ts) the statement joins it, and the hand-off and the wake-ups wait for its commit.
 */
export class Outbox {
  constructor(
    private readonly db: Db,
    private readonly notifier: DeliveryNotifier,
    private readonly sequencer: Sequencer,
  ) {}

  /** A change, its event and the event's deliveries (changeStatement). */
  async change<Row>(mutation: Mutation, input: EventInput): Promise<Row[]> {
    const event = buildEvent(input);
    const handOff = this.notifier.handOff(1);
    let rows: WithFanOut<Row>[];
    try {
      rows = await this.db.query<WithFanOut<Row>>(changeStatement(mutation, event, true), [
        ...mutation.params,
        ...eventValues(event, newId('evb', event.createdAt)),
        ...fanOutValues(event),
        ...handOffValues(handOff),
      ]);
    } catch (error) {
      handOff?.cancel();
      throw error;
    }
    this.settle(handOff, rows.length > 0 ? 1 : 0, rows[0]?.fanout ?? undefined, () => event.body);
    return withoutFanOut(rows);
  }

  /**
   * Many changes with an event each (changeManyStatement): creations that arrive together are
   * written this way. Their deliveries are handed over under `handOff` if one is given (reserved
   * beforehand with notifier.handOff), else under a reservation made here.
   */
  async changeMany<Row, Input>(batch: Batch<Input>, handOff = this.notifier.handOff(batch.rows.length)): Promise<Row[]> {
    let rows: WithFanOut<Row>[];
    try {
      rows = await this.db.query<WithFanOut<Row>>(changeManyStatement(batch, true), [JSON.stringify(batchRows(batch.rows)), ...handOffValues(handOff)]);
    } catch (error) {
      handOff?.cancel();
      throw error;
    }
    const bodies = new Map(batch.rows.map((r) => [r.event_id, r.event_body]));
    this.settle(handOff, batch.rows.length, rows[0]?.fanout ?? undefined, (eventId) => bodies.get(eventId));
    return withoutFanOut(rows);
  }

  /**
   * Once the write has committed, hands its rows to the local worker and wakes workers and the
   * sequencer: at once for a statement of its own, at the end of a request's transaction when it
   * joined one (a keyed POST, db/scope.ts); for rows rolled back it only cancels the hand-off.
   */
  private settle(handOff: HandOff | null, events: number, fanout: FanOutResult | undefined, bodyOf: (eventId: string) => string | undefined): void {
    this.db.afterCommit(
      () => {
        this.notifier.committed(handOff, events, fanout, bodyOf);
        if (events > 0) this.sequencer.wake();
      },
      () => handOff?.cancel(),
    );
  }
}
