import type { Queryable } from '../../db/db.js';

/** Rows one move takes of an endpoint at most; the rest are taken by the next. */
export const BACKLOG_MOST = 1_000;

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
 * every time the service writes. Returns how many rows moved, by endpoint.
 */
export async function moveBacklogs(db: Queryable, now: Date, moves: Move[]): Promise<Map<string, number>> {
  const rows = await db.query<{ endpoint_id: string; moved: number }>(
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
       RETURNING w.endpoint_id
     )
     SELECT endpoint_id, count(*)::int AS moved FROM moved GROUP BY endpoint_id`,
    [moves.map((m) => m.endpointId), moves.map((m) => m.after), moves.map((m) => Math.max(1, Math.ceil(m.stepMs))), now, BACKLOG_MOST],
  );
  return new Map(rows.map((r) => [r.endpoint_id, r.moved]));
}

/**
 * A worker's backlog moves, one statement at a time: the moves asked for by one batch of jobs, or
 * while a statement runs, go together in the next. Ten endpoints found hanging at once after a
 * start make one statement on one connection, not ten statements holding ten of the connections
 * that the API's writes need.
 */
export class BacklogMoves {
  private queued: { move: Move; now: Date; moved: (rows: number) => void }[] = [];
  /** A statement is due to take what is queued. */
  private scheduled = false;
  /** The last statement started or scheduled: each waits for the one before. */
  private last: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Queryable,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Moves the endpoint's rows due at `now` with the next statement; resolves to how many moved (0 on a failure). */
  move(endpointId: string, now: Date, after: Date, stepMs: number): Promise<number> {
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
      return new Map<string, number>();
    });
    for (const { move, moved: resolve } of batch) resolve(moved.get(move.endpointId) ?? 0);
  }
}
