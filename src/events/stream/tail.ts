import type { Queryable } from '../../db/db.js';
import { readAfter } from './log.js';
import { compare, later, through, type LogEvent, type Position } from './position.js';

/** Events a tail reads per statement. */
const PAGE = 500;
/** Events a tail keeps for its readers; a reader further behind reads the log itself. */
const KEEP = 1_000;
/** Shortest wait before reading again for an event that is not yet settled. */
const MIN_WAIT_MS = 5;

/** What a tail needs of its hub. */
export interface TailDeps {
  db: Queryable;
  /** The settled horizon now (outbox/in-flight.ts): events at or before it are final. */
  horizon(): number;
  /** Milliseconds until an event at `at` is settled by the clock alone (0: only a write in flight holds it). */
  settleDelay(at: number): number;
  onError(error: unknown): void;
}

/** A reader of a tail: woken when the tail has read further. */
export interface TailReader {
  wake(): void;
}

/**
 * The shared end of one workspace's event log in this process. However many streams follow the
 * workspace, one tail reads its new events: once per wake-up (coalesced: at most one read in flight
 * and one more queued), never per stream. It reads forward from `head` in the log's order, takes
 * only settled events (outbox/in-flight.ts) and keeps the last KEEP of them in `kept`, which holds
 * every event in (`start`, `head`]; its readers take what they need from there. An event read
 * before it is settled is read again once it is: at the clock's time for it, or when a write of
 * this process that held it back ends (the hub wakes the tail).
 */
export class WorkspaceTail {
  head: Position;
  start: Position;
  kept: LogEvent[] = [];
  readonly readers = new Set<TailReader>();
  /** The time of the oldest event read but not yet settled; null when there is none. */
  held: number | null = null;
  private reading = false;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    readonly workspaceId: string,
    private readonly deps: TailDeps,
  ) {
    this.head = this.start = through(deps.horizon());
  }

  /** Reads what is new (now, or right after the read in flight). */
  refresh(): void {
    if (this.closed) return;
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = true;
    void this.read().finally(() => (this.reading = false));
  }

  /** The kept events after `position` (which must not be before `start`). */
  after(position: Position): LogEvent[] {
    let low = 0;
    let high = this.kept.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (compare({ at: this.kept[middle].at, id: this.kept[middle].id }, position) > 0) high = middle;
      else low = middle + 1;
    }
    return this.kept.slice(low);
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private async read(): Promise<void> {
    do {
      this.again = false;
      const horizon = this.deps.horizon();
      let rows: LogEvent[];
      try {
        rows = await readAfter(this.deps.db, this.workspaceId, this.head, null, PAGE);
      } catch (error) {
        // The next wake-up or poll reads again; the streams stay open meanwhile.
        this.deps.onError(error);
        return;
      }
      if (this.closed) return;
      let settled = 0;
      while (settled < rows.length && rows[settled].at <= horizon) settled++;
      this.keep(rows.slice(0, settled));
      if (settled === PAGE) {
        const last = rows[PAGE - 1];
        this.head = { at: last.at, id: last.id };
        this.again = true;
      } else {
        // Every event up to the horizon has been read: the head moves there, even past the last one.
        const last = rows[settled - 1];
        this.head = later(last ? { at: last.at, id: last.id } : this.head, through(horizon));
      }
      this.held = settled < rows.length ? rows[settled].at : null;
      // The horizon was taken before the read: an event it held back may have settled meanwhile.
      if (this.held !== null && this.deps.horizon() >= this.held) this.again = true;
      for (const reader of this.readers) reader.wake();
    } while (this.again && !this.closed);
    this.waitForHeld();
  }

  private keep(events: LogEvent[]): void {
    if (events.length === 0) return;
    this.kept.push(...events);
    if (this.kept.length > KEEP) {
      const dropped = this.kept.splice(0, this.kept.length - KEEP);
      const last = dropped[dropped.length - 1];
      this.start = { at: last.at, id: last.id };
    }
  }

  /** An event held back by the clock is read again when the clock has passed it. */
  private waitForHeld(): void {
    if (this.held === null || this.timer || this.closed) return;
    const delay = this.deps.settleDelay(this.held);
    if (delay <= 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.refresh();
    }, Math.max(delay, MIN_WAIT_MS));
    this.timer.unref();
  }
}
