import type { Queryable } from '../../db/db.js';
import { MARK_OF_ROW } from './claim.js';

/** Rows one move takes of an endpoint at most; the rest are taken by the next. */
export const BACKLOG_MOST = 1_000;

/** A row a move or a deferral gave a later time: its id and the next_attempt_at it was given. */
export interface Placed {
  id: string;
  at: Date;
}

/** One row to move: from the time it was placed at to `later`. */
export type RowMove = Placed & { later: Date };

/** One endpoint's backlog to move: behind `after`, `stepMs` apart. */
export interface Move {
  endpointId: string;
  after: Date;
  stepMs: number;
}

/**
 * Moves endpoints' due backlogs behind their lanes' horizons in one statement (lanes.ts): of each
 * endpoint, the rows a claim would take now (pending, due, not locked by a worker), BACKLOG_MOST at
 * most, get next_attempt_at `after + n × stepMs` in their due order, n from 1. Without it, every
 * row of an endpoint that cannot take more would be claimed, offered and deferred one by one, and a
 * backlog of thousands at the head of the due index would keep everyone else's deliveries waiting
 * behind it. Rows of a hand-off under lease are not due, so never moved. Whole milliseconds, as
 * every time the service writes. Returns the rows moved, by endpoint, in their new order.
 */
export async function moveBacklogs(db: Queryable, now: Date, moves: Move[]): Promise<Map<string, Placed[]>> {
  const rows = await db.query<{ endpoint_id: string; id: string; at: Date }>(
    `WITH due AS (
       SELECT d.id, m.after, m.step, row_number() OVER (PARTITION BY m.endpoint_id ORDER BY d.next_attempt_at, d.id) AS n
         FROM unnest($1::text[], $2::timestamptz[], $3::int[]) AS m (endpoint_id, after, step)
         CROSS JOIN LATERAL (
           SELECT id, next_attempt_at FROM webhook_deliveries
            WHERE endpoint_id = m.endpoint_id AND status = 'pending' AND next_attempt_at <= $4
            LIMIT $5 FOR UPDATE SKIP LOCKED) d
     ), moved AS (
       UPDATE webhook_deliveries w SET next_attempt_at = due.after + due.n * due.step * interval '1 millisecond'
         FROM due WHERE w.id = due.id
       RETURNING w.endpoint_id, w.id, w.next_attempt_at AS at
     )
     SELECT endpoint_id, id, at FROM moved ORDER BY at`,
    [moves.map((m) => m.endpointId), moves.map((m) => m.after), moves.map((m) => Math.max(1, Math.ceil(m.stepMs))), now, BACKLOG_MOST],
  );
  const placed = new Map<string, Placed[]>();
  for (const row of rows) {
    const list = placed.get(row.endpoint_id) ?? [];
    list.push({ id: row.id, at: row.at });
    placed.set(row.endpoint_id, list);
  }
  return placed;
}

/**
 * Moves rows placed earlier to the times given (`later`), in one statement: only those still
 * pending at the time they were placed, not yet due and not locked by a worker. A row claimed
 * since, or given a lease, holds another time and is left as it is. Returns how many moved.
 */
export async function moveRows(db: Queryable, now: Date, rows: RowMove[]): Promise<number> {
  const moved = await db.query(
    `WITH r AS (
       SELECT d.id, r.later FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) AS r (id, at, later)
         JOIN webhook_deliveries d ON d.id = r.id
        WHERE d.status = 'pending' AND ${MARK_OF_ROW} = r.at AND d.next_attempt_at > $4
          FOR UPDATE OF d SKIP LOCKED
     )
     UPDATE webhook_deliveries w SET next_attempt_at = r.later FROM r WHERE w.id = r.id
     RETURNING w.id`,
    [rows.map((r) => r.id), rows.map((r) => r.at), rows.map((r) => r.later), now],
  );
  return moved.length;
}

/**
 * A worker's backlog moves, one statement at a time: the moves asked for by one batch of jobs, or
 * while a statement runs, go together in the next. Ten endpoints found hanging at once after a
 * start make one statement on one connection, not ten statements holding ten of the connections
 * that the API's writes need.
 */
export class BacklogMoves {
  private queued: { move: Move; now: Date; moved: (rows: Placed[]) => void }[] = [];
  /** A statement is due to take what is queued. */
  private scheduled = false;
  /** The last statement started or scheduled: each waits for the one before. */
  private last: Promise<void> = Promise.resolve();
  /** Moves asked for and not yet written, and when the last statement ended (performance.now()), or the worker was made. */
  private unwritten = 0;
  private endedAt = performance.now();

  constructor(
    private readonly db: Queryable,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Moves the endpoint's rows due at `now` with the next statement; resolves to the rows moved (none on a failure). */
  move(endpointId: string, now: Date, after: Date, stepMs: number): Promise<Placed[]> {
    this.unwritten++;
    return new Promise((moved) => {
      this.queued.push({ move: { endpointId, after, stepMs }, now, moved });
      if (this.scheduled) return;
      this.scheduled = true;
      // The rest of the batch being offered asks in the same turn of the event loop.
      this.last = this.last.then(() => new Promise<void>((resolve) => setImmediate(resolve))).then(() => this.run());
    });
  }

  private async run(): Promise<void> {
    this.scheduled = false;
    const batch = this.queued;
    this.queued = [];
    // An endpoint asked for twice moves once, behind the later horizon.
    const moves = new Map(batch.map((b) => [b.move.endpointId, b.move]));
    const now = new Date(Math.max(...batch.map((b) => b.now.getTime())));
    const moved = await moveBacklogs(this.db, now, [...moves.values()]).catch((error) => {
      this.onError(error);
      return new Map<string, Placed[]>();
    });
    this.unwritten -= batch.length;
    this.endedAt = performance.now();
    for (const { move, moved: resolve } of batch) resolve(moved.get(move.endpointId) ?? []);
  }

  /** How long no move has been asked for or written, in ms at `perfNow`: 0 while one is. */
  quietFor(perfNow: number): number {
    return this.unwritten > 0 ? 0 : perfNow - this.endedAt;
  }
}
