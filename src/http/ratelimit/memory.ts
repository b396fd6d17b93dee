import { decide, type RateLimitDecision, type RateLimitRule, type RateLimitStore } from './store.js';

/**
 * The admission times of one key, oldest first: `times[head..]` are in the window. Expired times are
 * skipped by moving `head` and cut off in bulk now and then, so a hit costs O(log n) however high
 * the limit and the request rate are.
 */
interface Log {
  times: number[];
  head: number;
  windowMs: number;
}

/** Index of the first time greater than `value` in `times[from..]` (sorted). */
function upperBound(times: number[], from: number, value: number): number {
  let lo = from;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (times[mid] <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Counters of one process: per key, the admission times inside the window (at most `limit` of
 * them). Keys whose window has emptied are swept once per window of clock time, so memory follows
 * the set of recently active callers.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly logs = new Map<string, Log>();
  private lastSweepMs = -Infinity;

  async hit(key: string, rule: RateLimitRule, nowMs: number, consume = true): Promise<RateLimitDecision> {
    return this.hitSync(key, rule, nowMs, consume);
  }

  /** The same as `hit`, for callers (the Redis store's fallback) that must not wait. */
  hitSync(key: string, rule: RateLimitRule, nowMs: number, consume = true): RateLimitDecision {
    this.sweep(nowMs, rule.windowMs);
    const found = this.logs.get(key);
    // A look at a key with nothing counted (the failed-authentication guard, every request).
    if (!found && !consume) return decide(rule, nowMs, rule.limit > 0, 0, null, null);
    const log = found ?? { times: [], head: 0, windowMs: rule.windowMs };
    log.windowMs = rule.windowMs;
    log.head = upperBound(log.times, log.head, nowMs - rule.windowMs);
    if (log.head > 64 && log.head * 2 > log.times.length) {
      log.times.splice(0, log.head);
      log.head = 0;
    }

    let count = log.times.length - log.head;
    const allowed = count < rule.limit;
    if (allowed && consume) {
      const last = log.times[log.times.length - 1];
      if (count === 0 || last <= nowMs) log.times.push(nowMs);
      else log.times.splice(upperBound(log.times, log.head, nowMs), 0, nowMs);
      count += 1;
      this.logs.set(key, log);
    } else if (count === 0) {
      this.logs.delete(key);
    }
    const oldest = count ? log.times[log.head] : null;
    const unblock = allowed ? null : log.times[log.head + count - rule.limit];
    return decide(rule, nowMs, allowed, count, oldest, unblock);
  }

  private sweep(nowMs: number, windowMs: number): void {
    if (nowMs - this.lastSweepMs < windowMs) return;
    this.lastSweepMs = nowMs;
    for (const [key, log] of this.logs) {
      const newest = log.times[log.times.length - 1];
      if (newest === undefined || newest <= nowMs - log.windowMs) this.logs.delete(key);
    }
  }

  /** Number of keys held, for tests of the sweep. */
  get size(): number {
    return this.logs.size;
  }

  async close(): Promise<void> {
    this.logs.clear();
  }
}
