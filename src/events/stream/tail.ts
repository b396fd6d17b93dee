import type { Queryable } from '../../db/db.js';
import { readAfter } from './log.js';
import { compare, type LogEvent, type Position } from './position.js';

/** Events a tail reads per statement. */
const PAGE = 500;
/** Events a tail keeps for its readers; a reader further behind reads the log itself. */
const KEEP = 1_000;

/** A reader of a tail: woken when the tail has read further. */
export interface TailReader {
  wake(): void;
}

/**
 * The shared end of one workspace's event log in this process. However many streams follow the
 * workspace, one tail reads its new events: once per wake-up (coalesced: at most one read in flight
 * and one more queued), never per stream. It reads forward from `head` in the log's order and keeps
 * the last KEEP events in `kept`, which holds every event in (`start`, `head`]; its readers take
 * what they need from there.
 */
export class WorkspaceTail {
  start: Position;
  kept: LogEvent[] = [];
  readonly readers = new Set<TailReader>();
  private reading = false;
  private again = false;
  private closed = false;

  constructor(
    readonly workspaceId: string,
    public head: Position,
    private readonly db: Queryable,
    private readonly onError: (error: unknown) => void,
  ) {
    this.start = head;
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
      if (compare(this.kept[middle].position, position) > 0) high = middle;
      else low = middle + 1;
    }
    return this.kept.slice(low);
  }

  close(): void {
    this.closed = true;
  }

  private async read(): Promise<void> {
    do {
      this.again = false;
      let rows: LogEvent[];
      try {
        rows = await readAfter(this.db, this.workspaceId, this.head, null, PAGE);
      } catch (error) {
        // The next wake-up or poll reads again; the streams stay open meanwhile.
        this.onError(error);
        return;
      }
      if (this.closed) return;
      if (rows.length > 0) {
        this.keep(rows);
        this.head = rows[rows.length - 1].position;
        for (const reader of this.readers) reader.wake();
      }
      if (rows.length === PAGE) this.again = true;
    } while (this.again && !this.closed);
  }

  private keep(events: LogEvent[]): void {
    this.kept.push(...events);
    if (this.kept.length > KEEP) {
      const dropped = this.kept.splice(0, this.kept.length - KEEP);
      this.start = dropped[dropped.length - 1].position;
    }
  }
}
