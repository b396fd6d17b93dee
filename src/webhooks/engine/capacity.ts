import { monitorEventLoopDelay } from 'node:perf_hooks';

/** How often the limit is reconsidered. */
export const ADJUST_MS = 100;

/** Event-loop delay (p99 over the last period) past which the process is overloaded: the limit falls. */
export const LAG_HIGH_MS = 40;
/** Below this delay, and below CPU_HIGH, a worker held back by its limit may raise it. */
export const LAG_LOW_MS = 15;
/** The share of one core past which the process has no room left: the limit stops rising. */
export const CPU_HIGH = 0.85;

/** What the process is under now: its event-loop delay and its share of a core, both since the last reading. */
export interface Load {
  lagMs: number;
  cpu: number;
}

export interface CapacitySettings {
  /** The limit never falls below this. */
  min: number;
  /** Nor rises above this (SVC_WORKER_CONCURRENCY). */
  max: number;
}

/**
 * How many attempts a worker may have in flight: a limit that follows the machine rather than a
 * constant (additive increase, multiplicative decrease, as TCP's congestion window). Every
 * ADJUST_MS it is looked at:
 * - the event loop lags (LAG_HIGH_MS): the process has more to do than it can, and the limit falls
 *   by a quarter;
 * - the limit held work back (jobs waited for it) while the loop was prompt (LAG_LOW_MS) and a core
 *   was left (CPU_HIGH): it rises by a tenth. Receivers that are slow cost sockets and memory, not
 *   CPU, so the limit grows until their answers keep the process busy.
 * Each endpoint's part of it stays bounded by its lane (lanes.ts).
 */
export class Capacity {
  limit: number;

  constructor(
    private readonly settings: CapacitySettings,
    private readonly load: () => Load,
  ) {
    this.limit = Math.min(settings.max, Math.max(settings.min, 64));
  }

  private get min(): number {
    return Math.min(this.settings.min, this.settings.max);
  }

  /** Reconsiders the limit; `held` says whether it held work back since the last time. */
  adjust(held: boolean): void {
    const { lagMs, cpu } = this.load();
    if (lagMs > LAG_HIGH_MS) this.limit = Math.max(this.min, Math.floor(this.limit * 0.75));
    else if (held && lagMs < LAG_LOW_MS && cpu < CPU_HIGH) this.limit = Math.min(this.settings.max, this.limit + Math.ceil(this.limit / 10));
  }
}

const RESOLUTION_MS = 10;

/** This process's load: the event loop's delay (p99) and the CPU it used, each since the last call. */
export function processLoad(): { read(): Load; stop(): void } {
  // The histogram's timer fires every RESOLUTION_MS: what it records beyond that is the delay.
  const delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  delay.enable();
  let cpu = process.cpuUsage();
  let at = performance.now();
  return {
    read() {
      const used = process.cpuUsage(cpu);
      const now = performance.now();
      const lagMs = delay.count > 0 ? Math.max(0, delay.percentile(99) / 1e6 - RESOLUTION_MS) : 0;
      const load = { lagMs, cpu: (used.user + used.system) / 1000 / Math.max(1, now - at) };
      delay.reset();
      cpu = process.cpuUsage();
      at = now;
      return load;
    },
    stop: () => delay.disable(),
  };
}
