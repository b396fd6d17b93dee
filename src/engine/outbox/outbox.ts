import { channelSql } from '../../db/channels.js';
import type { Db, Queryable } from '../../db/db.js';
import { named } from '../../db/named.js';
import { EVENT_CHANNEL, eventWakePayload } from '../log/channel.js';
import { subscriptionPatterns } from '../log/patterns.js';
import type { Sequencer } from '../log/sequencer.js';
import { buildEvent, type EventInput } from '../log/store.js';
import { idTimePrefix, newId } from '../../lib/ids.js';
import { toIso } from '../../lib/iso.js';
import { currentTrace, tracing } from '../../lib/trace.js';
import type { FanOutResult, HandOff, WorkerLink, WrittenEvent } from '../delivery/handoff.js';
import { fanOutCtes } from './fanout.js';

/**
 * The outbox: the one writer of events and deliveries. A change, its events and their deliveries
 * are written by one statement, so an event is never lost and never sent for a change that was
 * rolled back. Products, orders, auto-disables all write through `write` (or `writeIn`, inside a
 * transaction of the caller's); test pings, replays and recoveries queue deliveries of their own
 * through `enqueue` (deliveries.ts). No other module inserts into `events` or `webhook_deliveries`
 * (a test holds to that).
 */

/** A change the events tell of: a data-modifying statement with RETURNING, its rows' `id` the events' subjects. */
export interface Change {
  /** SQL with named parameters (`:name`, db/named.ts). It may read the CTE `input`: one row per event. */
  sql: string;
  /** Its parameters; `input`, `lease` and `slots` are the outbox's own names. */
  values?: Record<string, unknown>;
  /** CTEs it needs ahead of it (`name AS (...)`): a data-modifying statement cannot hold a WITH inside another WITH. */
  before?: string;
  /** The columns of `input` it reads besides the events' (named apart from them), as jsonb_to_recordset lists them (`name text, ...`). */
  columns?: string;
}

export interface Write {
  /** Null when the change was made apart, earlier in the caller's transaction (writeIn). */
  change: Change | null;
  /** One event per row of `input`, each with the row's own values for the change's `columns`. */
  events: { event: EventInput; values?: Record<string, unknown> }[];
}

const EVENT_COLUMNS =
  'event_id text, workspace_id text, event_type text, subject_type text, subject_id text, event_body text, at timestamptz, delivery_prefix text, patterns text[], batch_id text, trace_context text';

/**
 * The rows of `input`: each event built (its id and the text it is stored and sent as, once) with
 * what its fan-out needs, and the batch of the write's events in its workspace (the unit the
 * sequencer positions, engine/log/sequencer.ts).
 */
function inputRows(write: Write): Record<string, unknown>[] {
  const batches = new Map<string, string>();
  const trace = currentTrace();
  return write.events.map(({ event: input, values }) => {
    const event = buildEvent(input);
    let batch = batches.get(event.workspaceId);
    if (batch === undefined) batches.set(event.workspaceId, (batch = newId('evb', event.createdAt)));
    const row: Record<string, unknown> = {
      event_id: event.id,
      workspace_id: event.workspaceId,
      event_type: event.type,
      subject_type: event.subject?.type ?? null,
      subject_id: event.subject?.id ?? null,
      event_body: event.body,
      at: toIso(event.createdAt),
      delivery_prefix: idTimePrefix('whd', event.createdAt),
      patterns: subscriptionPatterns(event.type),
      batch_id: batch,
    };
    // Only while tracing is on: otherwise the input is what it always was.
    const kept = input.trace === undefined ? trace : input.trace;
    if (kept !== null) row.trace_context = kept;
    // Added after the event's fields rather than spread ahead of them: V8 builds such a row many times faster.
    return values === undefined ? row : Object.assign(row, values);
  });
}

/**
 * The write as one statement: the change as a CTE, each event logged only if the change returned
 * its subject, the events' batches, and the fan-out. One statement is atomic on its own, so a write
 * costs one round trip and no BEGIN/COMMIT. With `handOff`, deliveries are handed over (:lease,
 * :slots, the engine's handoff.ts), and with `deferring` the rows of endpoints that defer every job
 * are written deferred (:deferred_ids, :deferred_after, :deferred_steps); with `notify`, workers are
 * NOTIFYed at the caller's commit.
 */
function statement(change: Change | null, handOff: boolean, notify: boolean, deferring = false): string {
  const lease = handOff ? ', :lease::timestamptz AS lease, :slots::int AS slots' : '';
  return `WITH input AS MATERIALIZED (
       SELECT * FROM jsonb_to_recordset(:input::jsonb) AS i (${EVENT_COLUMNS}${change?.columns ? `, ${change.columns}` : ''})
     ),${change?.before ? ` ${change.before},` : ''}${change ? ` mutated AS (${change.sql}),` : ''}
     logged AS (
       INSERT INTO events (id, workspace_id, type, subject_type, subject_id, body, created_at, batch_id, trace_context)
       SELECT event_id, workspace_id, event_type, subject_type, subject_id, event_body, at, batch_id, trace_context FROM input
        ${change ? 'WHERE subject_id IN (SELECT id FROM mutated)' : ''}
       RETURNING id
     ), batched AS (
       INSERT INTO event_batches (id, workspace_id, event_ids)
       SELECT batch_id, workspace_id, array_agg(event_id ORDER BY event_id) FROM input
        WHERE event_id IN (SELECT id FROM logged) GROUP BY batch_id, workspace_id
     ), ${fanOutCtes(
       `(SELECT i.workspace_id, i.event_id, i.event_type, i.at, i.delivery_prefix, i.patterns, i.subject_id${lease}
           FROM input i JOIN logged l ON l.id = i.event_id)`,
       notify,
       handOff,
       deferring,
     )}
     SELECT ${change ? 'mutated.*, ' : ''}CASE WHEN row_number() OVER () = 1 THEN (SELECT row_to_json(fanout) FROM fanout) END AS fanout
       FROM ${change ? 'mutated' : '(SELECT 1) AS one'}`;
}

type WithFanOut<Row> = Row & { fanout: FanOutResult | null };

/** The statement's parameters of a hand-off: its lease and room, and the deferrals for the rows of endpoints that defer every job. */
function handOffValues(handOff: HandOff): Record<string, unknown> {
  const { lease, slots, deferrals } = handOff;
  if (deferrals.length === 0) return { lease, slots };
  return {
    lease,
    slots,
    deferred_ids: deferrals.map((d) => d.endpointId),
    deferred_after: deferrals.map((d) => d.after),
    deferred_steps: deferrals.map((d) => d.stepMs),
  };
}

/** The names of the event's columns of `input`, which a change's own columns must not take. */
const EVENT_NAMES = new Set(EVENT_COLUMNS.split(', ').map((column) => column.split(' ')[0]));

function parameters(write: Write, rows: Record<string, unknown>[], extra: Record<string, unknown>): Record<string, unknown> {
  for (const name of Object.keys(write.events[0]?.values ?? {})) if (EVENT_NAMES.has(name)) throw new Error(`${name} is a column of the event's in input`);
  const own = { input: JSON.stringify(rows), ...extra };
  for (const name of Object.keys(own)) if (write.change?.values && name in write.change.values) throw new Error(`:${name} is the outbox's own parameter`);
  return { ...write.change?.values, ...own };
}

const withoutFanOut = <Row>(rows: WithFanOut<Row>[]): Row[] => rows.map(({ fanout: _, ...row }) => row as Row);

/**
 * A write inside the caller's transaction `q`: workers and every process's sequencer are NOTIFYed
 * at its commit. Returns the change's rows (none for a write without a change).
 */
export function writeIn<Row>(q: Queryable, write: Write): Promise<Row[]> {
  const traced = tracing();
  if (traced === null) return writeInNow(q, write);
  let deliveries = 0;
  return traced.write(eventTypes(write), () => writeInNow<Row>(q, write, (n) => (deliveries = n)), () => deliveries);
}

async function writeInNow<Row>(q: Queryable, write: Write, counted?: (deliveries: number) => void): Promise<Row[]> {
  const rows = inputRows(write);
  const { sql, params } = named(statement(write.change, false, true), parameters(write, rows, {}));
  const result = await q.query<WithFanOut<Row>>(sql, params);
  if (write.change === null || result.length > 0) {
    await q.query(`SELECT pg_notify(${channelSql(EVENT_CHANNEL)}, $1)`, [eventWakePayload('', new Set(rows.map((r) => r.workspace_id as string)))]);
  }
  counted?.(deliveriesOf(result[0]?.fanout));
  return withoutFanOut(result);
}

const eventTypes = (write: Write) => write.events.map((e) => e.event.type);

/** The deliveries a write queued for sending: due now, or handed over. */
const deliveriesOf = (fanout: FanOutResult | null | undefined) => (fanout ? fanout.pending + (fanout.handed?.length ?? 0) : 0);

/**
 * Standalone writes: each a statement of its own, committed when it returns, whose deliveries are
 * handed to this process's workers or wake workers after it (the engine's WorkerLink), and whose
 * events wake this process's sequencer. Inside a request's transaction (db/scope.ts) the statement
 * joins it, and the hand-off and the wake-ups wait for its commit.
 */
export class Outbox {
  constructor(
    private readonly db: Db,
    private readonly link: Pick<WorkerLink, 'reserve' | 'committed'>,
    private readonly sequencer: Pick<Sequencer, 'wake'>,
  ) {}

  /** A write inside the caller's transaction `q` (writeIn): the engine's, for an endpoint it disables. */
  writeIn<Row>(q: Queryable, write: Write): Promise<Row[]> {
    return writeIn(q, write);
  }

  /** A change, its events and their deliveries, as one statement; returns the change's rows. */
  write<Row>(write: Write): Promise<Row[]> {
    const traced = tracing();
    if (traced === null) return this.writeNow(write);
    let deliveries = 0;
    return traced.write(eventTypes(write), () => this.writeNow<Row>(write, (n) => (deliveries = n)), () => deliveries);
  }

  private async writeNow<Row>(write: Write, counted?: (deliveries: number) => void): Promise<Row[]> {
    const rows = inputRows(write);
    const handOff = this.link.reserve(rows.length);
    const deferring = handOff !== null && handOff.deferrals.length > 0;
    const { sql, params } = named(statement(write.change, handOff !== null, false, deferring), parameters(write, rows, handOff ? handOffValues(handOff) : {}));
    let result: WithFanOut<Row>[];
    try {
      result = await this.db.query<WithFanOut<Row>>(sql, params);
    } catch (error) {
      handOff?.cancel();
      throw error;
    }
    counted?.(deliveriesOf(result[0]?.fanout));
    const logged = write.change === null || result.length > 0;
    const events = new Map(rows.map((r) => [r.event_id as string, r as unknown as WrittenEvent]));
    this.db.afterCommit(
      () => {
        this.link.committed(handOff, logged ? rows.length : 0, result[0]?.fanout ?? undefined, (eventId) => events.get(eventId));
        if (logged) this.sequencer.wake();
      },
      () => handOff?.cancel(),
    );
    return withoutFanOut(result);
  }
}
