import { randomBytes } from 'node:crypto';
import { channelSql } from '../../db/channels.js';
import type { Db } from '../../db/db.js';
import type { Clock } from '../../lib/clock.js';
import { jobOf, type Job, type JobRow } from './job.js';

/** The channel writes NOTIFY when they commit deliveries due now, and workers LISTEN on; named per schema (db/channels.ts). */
export const DELIVERY_CHANNEL = 'webhook_deliveries';

/** What a worker offers the writes of its own process. */
export interface LocalWorker {
  /** Something may be due: claim. */
  wake(): void;
  /** Sets aside room for up to `max` rows a write will hand over; returns how many (0: none). */
  reserve(max: number): number;
  /** Takes the jobs handed over under `reserved` places; places the write did not fill are freed. */
  receive(jobs: Job[], reserved: number): void;
  /** Endpoints whose new rows a write should write deferred: their lanes would defer each now. */
  deferrals(): Deferral[];
  /** A write committed `rows` rows of `deferral`'s endpoint deferred. */
  deferredRows(deferral: Deferral, rows: number): void;
}

/**
 * An endpoint whose lane defers every job now (hanging: see lanes.ts): a write inserts its new rows
 * due from `after` on, `stepMs` apart, instead of handing them over to be deferred one by one.
 */
export interface Deferral {
  endpointId: string;
  after: Date;
  stepMs: number;
}

/** What a write's fan-out reports once committed (../../outbox/fanout.ts). */
export interface FanOutResult {
  /** Pending rows due now: another worker must claim them. */
  pending: number;
  /** Rows written already leased under the write's hand-off (none without one). */
  handed: HandedRow[] | null;
  /** Rows written deferred under the hand-off's deferrals, by endpoint id (none without any). */
  deferred: Record<string, number> | null;
}

/** A delivery a write inserted already leased for a worker of its process, as the fan-out returns it. */
export type HandedRow = JobRow;

/** An event as the write gave it to the statement (outbox.ts): the text it is sent as, and its trace when one is kept. */
export interface WrittenEvent {
  event_body: string;
  trace_context?: string;
}

/**
 * The fan-out's part of a hand-off (fanout.ts), as SQL. `ORDERING_KEY` is its expression of a
 * target's ordering key. Of a write's pending rows, the first `ev.slots` without an ordering key
 * get the lease `ev.lease` as their next_attempt_at (a row in its subject's order may have to wait
 * for an older one, and is never handed over); `handed` returns them, with what they are sent with.
 * With `deferring`, the statement has deferrals (DEFERRALS, joined as `dfr`), whose endpoints'
 * rows are written deferred (deferredAt) rather than handed over.
 */
export function handedLease(orderingKey: string, deferring: boolean): string {
  const handable = `w.active AND ${orderingKey} IS NULL${deferring ? ' AND dfr.endpoint_id IS NULL' : ''}`;
  return `CASE WHEN ${handable} AND row_number() OVER (PARTITION BY ${handable}) <= ev.slots THEN ev.lease END`;
}

/**
 * The rows of endpoints written deferred (`dfr`, from DEFERRALS): due one step apart after the
 * deferral's time, in the order of their events. Rows in their subject's order are never deferred so.
 */
export const deferredAt = (orderingKey: string) =>
  `CASE WHEN w.active AND ${orderingKey} IS NULL AND dfr.endpoint_id IS NOT NULL
        THEN dfr.after + make_interval(secs => dfr.step_ms * row_number() OVER (PARTITION BY w.id, ${orderingKey} IS NULL ORDER BY ev.event_id) / 1000.0) END`;

/** The deferrals of a hand-off, as a FROM item to join on the endpoint (:deferred_ids, :deferred_after, :deferred_steps). */
export const DEFERRALS = 'unnest(:deferred_ids::text[], :deferred_after::timestamptz[], :deferred_steps::int[]) AS dfr (endpoint_id, after, step_ms)';

/**
 * The CTEs that return the rows handed over and, with `deferring`, count the rows written deferred
 * by endpoint. A handed row is told apart by next_attempt_at after its creation (a row due now has
 * next_attempt_at = created_at) and an endpoint without a deferral.
 */
export function handed(deferring: boolean): string {
  return `handed AS (
       SELECT f.id, f.workspace_id, f.endpoint_id, f.event_id, f.event_type, w.url, w.url_enc, w.exchange, w.routing_key, w.subject, w.propagate_trace, w.consecutive_failures,
              w.throttled_since IS NOT NULL AS endpoint_throttled, w.rate_limit,
              w.headers_enc, w.secret_enc, w.previous_secret_enc, w.previous_secret_expires_at
         FROM fanned f JOIN webhook_endpoints w ON w.id = f.endpoint_id
        WHERE f.status = 'pending' AND f.next_attempt_at > f.created_at${deferring ? ' AND f.endpoint_id <> ALL(:deferred_ids::text[])' : ''}
     )${deferring ? DEFERRED : ''}`;
}

const DEFERRED = `, deferred AS (
       SELECT endpoint_id, count(*)::int AS n FROM fanned
        WHERE status = 'pending' AND next_attempt_at > created_at AND endpoint_id = ANY(:deferred_ids::text[])
        GROUP BY endpoint_id
     )`;

/** Deliveries reserved per event before a write has shown more. */
export const PER_EVENT = 16;

/** Room reserved in a local worker for one write's rows; settle or cancel it once the write has ended. */
export class HandOff {
  private done = false;

  constructor(
    readonly lease: Date,
    readonly slots: number,
    private readonly worker: LocalWorker,
    readonly deferrals: Deferral[] = [],
  ) {}

  /** The write committed: its handed rows (each event's text and trace given by `eventOf`) are the worker's. */
  settle(rows: HandedRow[], eventOf: (eventId: string) => WrittenEvent | undefined, deferred: Record<string, number> | null = null): void {
    if (this.done) return;
    this.done = true;
    for (const deferral of this.deferrals) {
      const n = deferred?.[deferral.endpointId] ?? 0;
      if (n > 0) this.worker.deferredRows(deferral, n);
    }
    this.worker.receive(
      rows.map((row) => {
        const event = eventOf(row.event_id);
        return jobOf(row, { attempt: 0, mark: this.lease, hold: null, endpointActive: true, body: event?.event_body ?? null, trace: event?.trace_context ?? null });
      }),
      this.slots,
    );
  }

  /** The write failed: nothing was handed over. */
  cancel(): void {
    if (this.done) return;
    this.done = true;
    this.worker.receive([], this.slots);
  }
}

/**
 * The link between a process's writes and its delivery workers: the one thing the outbox knows of
 * the engine.
 *
 * Hand-off. Before a write, reserve() sets aside room in a local worker, so that the write inserts
 * that many of its deliveries already leased (their next_attempt_at a lease, as a claim would have
 * set it). When the write has committed, committed() gives them to the worker: the first attempt
 * starts right after the commit, without a wake-up or a claim. Should the process die meanwhile,
 * the rows come due when the lease runs out. Rows beyond the reserved room are due now. The rows of
 * an endpoint whose lane defers every job now (one hanging) are not handed over but written
 * deferred, spaced as the lane would have deferred them one by one, so that each costs one write and
 * no work in the worker.
 *
 * Wake-ups. A NOTIFY inside a write's transaction takes PostgreSQL's notification-queue lock at
 * commit, which serialises every such commit; so writes commit without one, and committed() wakes
 * this process's workers at once and sends at most one NOTIFY at a time for the others (wake-ups
 * meanwhile fold into one more). If the process dies between a commit and its NOTIFY, the workers'
 * polling finds the rows.
 */
export class WorkerLink {
  /** The payload of this process's NOTIFYs: its own workers, woken already, skip them. */
  readonly origin = randomBytes(8).toString('hex');
  private readonly local = new Set<LocalWorker>();
  private sending = false;
  private again = false;
  /**
   * Deliveries reserved per event: the most one event of this process has fanned out to, and
   * PER_EVENT at least, so that the first writes after a start, before any has shown its fan-out,
   * hand their rows over too. Room reserved and not filled is freed when the write ends.
   */
  private perEvent = PER_EVENT;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly leaseMs: number,
  ) {}

  /** Workers of this process register here besides LISTEN. */
  subscribe(worker: LocalWorker): () => void {
    this.local.add(worker);
    return () => this.local.delete(worker);
  }

  /** Room for the deliveries of a write of `events` events, in the first local worker that has any; null when none has. */
  reserve(events: number): HandOff | null {
    const wanted = events * this.perEvent;
    for (const worker of this.local) {
      const slots = worker.reserve(wanted);
      if (slots > 0) return new HandOff(new Date(this.clock.now().getTime() + this.leaseMs), slots, worker, worker.deferrals());
    }
    return null;
  }

  /** A write of `events` events committed with this fan-out: its handed rows go to their worker, the rest wake workers. */
  committed(handOff: HandOff | null, events: number, result: FanOutResult | undefined, eventOf: (eventId: string) => WrittenEvent | undefined): void {
    const handed = result?.handed ?? [];
    handOff?.settle(handed, eventOf, result?.deferred ?? null);
    const pending = result?.pending ?? 0;
    if (events > 0) this.perEvent = Math.max(this.perEvent, Math.ceil((handed.length + pending) / events));
    if (pending > 0) this.wake();
  }

  /** Deliveries are due now: this process's workers claim at once, the others on a NOTIFY. */
  wake(): void {
    for (const worker of this.local) worker.wake();
    if (this.sending) {
      this.again = true;
      return;
    }
    this.sending = true;
    void this.send();
  }

  private async send(): Promise<void> {
    do {
      this.again = false;
      // Best effort: a lost wake-up costs at most one polling interval, never a delivery.
      await this.db.query(`SELECT pg_notify(${channelSql(DELIVERY_CHANNEL)}, $1)`, [this.origin]).catch(() => {});
    } while (this.again);
    this.sending = false;
  }
}
