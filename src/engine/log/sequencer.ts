import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { channelSql, listenChannel } from '../../db/channels.js';
import type { Db } from '../../db/db.js';
import { EVENT_CHANNEL, MAX_LISTED, parseEventWake } from './channel.js';

/** Batches one statement positions at most; a run goes on while it finds this many. */
const RUN = 5_000;

/**
 * A run begins this long after the previous one began, at the soonest: under load one run positions
 * the batches of many writes rather than one or two, and a run after a quiet spell begins at once.
 */
const SPACING_MS = 25;

/**
 * Gives every committed batch without a position the next ones, in the order of batch ids, and
 * NOTIFYs the workspaces concerned (`$1` is this process's origin). The batches a statement sees
 * are those committed before it began: so a batch is positioned after every batch that committed
 * before its own write did. The one row of event_positions serialises concurrent runs (of this
 * process or others): a run waiting for it re-checks each batch on the row's new version, skips
 * the ones positioned meanwhile, and may leave a gap, which readers do not mind.
 */
const SEQUENCE = `WITH next AS (
    SELECT id, row_number() OVER (ORDER BY id) AS n FROM event_batches WHERE position IS NULL ORDER BY id LIMIT ${RUN}
  ), counted AS (
    SELECT count(*) AS total FROM next
  ), counter AS (
    UPDATE event_positions SET last = last + counted.total FROM counted WHERE counted.total > 0 RETURNING last - counted.total AS base
  ), positioned AS (
    UPDATE event_batches b SET position = counter.base + next.n FROM next, counter WHERE b.id = next.id AND b.position IS NULL
    RETURNING b.workspace_id
  ), workspaces AS (
    SELECT DISTINCT workspace_id FROM positioned
  )
  SELECT array_agg(workspace_id) AS workspace_ids, (SELECT total FROM counted)::int AS found,
         pg_notify(${channelSql(EVENT_CHANNEL)}, $1 || ':' || CASE WHEN count(*) <= ${MAX_LISTED} THEN string_agg(workspace_id, ',') ELSE '' END)
    FROM workspaces HAVING count(*) > 0`;

export type PositionedListener = (workspaceIds: string[]) => void;

/**
 * The event log's sequencer: gives each committed batch of events (migrations/019) its position,
 * the order in which the live streams send events (events/stream/). It runs after every write of
 * this process that committed events (wake), when another process's transaction committed some
 * (a NOTIFY on EVENT_CHANNEL without origin), and every `sweepMs` if a batch is left without a
 * position (a process that died between its commit and its run). Runs are coalesced: one at a
 * time in a process, and one more if woken meanwhile. Streams of this process are told at once,
 * those of others by the NOTIFY of the run.
 */
export class Sequencer {
  readonly origin = randomBytes(8).toString('hex');
  private readonly listeners = new Set<PositionedListener>();
  /** The run in flight, if any. */
  private current: Promise<void> | null = null;
  private again = false;
  /** When the last run began (performance.now()). */
  private lastRun = -Infinity;
  private stops: (() => unknown)[] = [];

  constructor(
    private readonly db: Db,
    private readonly sweepMs: number,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  /** `listener` is called with the workspaces whose batches a run of this process positioned. */
  subscribe(listener: PositionedListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Batches have committed: position them (now, or right after the run in flight). */
  wake(): void {
    if (this.current) {
      this.again = true;
      return;
    }
    this.current = this.run().finally(() => (this.current = null));
  }

  /** Resolves once a run that began after this call has ended. */
  settled(): Promise<void> {
    this.wake();
    return this.current!;
  }

  /** Listens for other processes' commits and sweeps for batches left behind, until stop(). */
  async start(): Promise<void> {
    const unlisten = await listenChannel(this.db, EVENT_CHANNEL, (payload) => {
      if (parseEventWake(payload).origin === '') this.wake();
    });
    const sweep = setInterval(() => void this.sweep(), this.sweepMs);
    sweep.unref();
    this.stops = [unlisten, () => clearInterval(sweep)];
    this.wake();
  }

  async stop(): Promise<void> {
    const stops = this.stops;
    this.stops = [];
    for (const stop of stops) await stop();
  }

  private async sweep(): Promise<void> {
    try {
      const left = await this.db.query('SELECT 1 FROM event_batches WHERE position IS NULL LIMIT 1');
      if (left.length > 0) this.wake();
    } catch (error) {
      this.onError(error);
    }
  }

  private async run(): Promise<void> {
    try {
      do {
        const wait = this.lastRun + SPACING_MS - performance.now();
        if (wait > 0) await delay(wait);
        this.lastRun = performance.now();
        this.again = false;
        const [row] = await this.db.query<{ workspace_ids: string[]; found: number }>(SEQUENCE, [this.origin]);
        if (row) for (const listener of this.listeners) listener(row.workspace_ids);
        if (row && row.found >= RUN) this.again = true;
      } while (this.again);
    } catch (error) {
      // The next commit, NOTIFY or sweep runs it again.
      this.onError(error);
    }
  }
}
