import { monitorEventLoopDelay } from 'node:perf_hooks';

/** How often the process's load is read. */
export const ADJUST_MS = 100;

/** Event-loop delay (p99 over one reading) past which a reading counts as overloaded. */
export const LAG_HIGH_MS = 50;

/** Readings looked at together: one second. */
export const WINDOW = 10;

/** Overloaded readings in a window that make the overload sustained (a GC pause spoils one or two). */
export const SUSTAINED = 7;

/** The capacity never falls below this part of its ceiling, however loaded the process. */
const FLOOR = 1 / 16;

/** What the process is under now: its event loop's delay since the last reading. */
export interface Load {
  lagMs: number;
}

/**
 * How many attempts a worker may have in flight. An attempt waiting on a receiver costs a socket
 * and a few kilobytes, not CPU, so the capacity starts at its ceiling (SVC_WORKER_CONCURRENCY),
 * from a worker's first claim on. It falls only when the process is measurably overloaded: the
 * event loop's delay over LAG_HIGH_MS in SUSTAINED of the last WINDOW readings. Then it falls by a
 * quarter, at most once a window, down to a sixteenth of the ceiling; once a whole window passes
 * without overload it climbs back by a tenth of the ceiling per reading. A lower capacity slows the
 * starting of new attempts and the claiming of new rows; attempts in flight go on and their
 * outcomes are written.
 */
export class Capacity {
  limit: number;
  private readonly readings: boolean[] = [];
  private sinceCut = WINDOW;

  constructor(
    readonly max: number,
    private readonly load: () => Load,
    private readonly changed: (limit: number) => void = () => {},
  ) {
    this.limit = max;
    changed(max);
  }

  /** Reads the load (every ADJUST_MS) and moves the limit if it calls for it. */
  adjust(): void {
    const overloaded = this.load().lagMs > LAG_HIGH_MS;
    this.readings.push(overloaded);
    if (this.readings.length > WINDOW) this.readings.shift();
    this.sinceCut++;
    const over = this.readings.filter(Boolean).length;
    const before = this.limit;
    if (over >= SUSTAINED && this.sinceCut >= WINDOW) {
      this.limit = Math.max(Math.ceil(this.max * FLOOR), Math.floor(this.limit * 0.75));
      this.sinceCut = 0;
    } else if (over === 0 && this.readings.length === WINDOW) {
      this.limit = Math.min(this.max, this.limit + Math.ceil(this.max / 10));
    }
    if (this.limit !== before) this.changed(this.limit);
  }
}

const RESOLUTION_MS = 10;

/** This process's load: the event loop's delay (p99) since the last call. */
export function processLoad(): { read(): Load; stop(): void } {
  // The histogram's timer fires every RESOLUTION_MS: what it records beyond that is the delay.
  const delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  delay.enable();
  return {
    read() {
      const lagMs = delay.count > 0 ? Math.max(0, delay.percentile(99) / 1e6 - RESOLUTION_MS) : 0;
      delay.reset();
      return { lagMs };
    },
    stop: () => delay.disable(),
  };
}
