import { decide, type RateLimitDecision, type RateLimitRule, type RateLimitStore } from './store.js';

/** Index of the first timestamp greater than `value` in a sorted array. */
function upperBound(sorted: number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Counters of one process: per key, the sorted admission times inside the window (at most `limit`
 * of them). Keys whose window has emptied are swept once per window of clock time, so memory
 * follows the set of recently active callers.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly logs = new Map<string, { entries: number[]; windowMs: number }>();
  private lastSweepMs = -Infinity;

  async hit(key: string, rule: RateLimitRule, nowMs: number, consume = true): Promise<RateLimitDecision> {
    return this.hitSync(key, rule, nowMs, consume);
  }

  /** The same as `hit`, for callers (the Redis store's fallback) that must not wait. */
  hitSync(key: string, rule: RateLimitRule, nowMs: number, consume = true): RateLimitDecision {
    this.sweep(nowMs, rule.windowMs);
    let log = this.logs.get(key);
    const entries = log?.entries ?? [];
    const expired = upperBound(entries, nowMs - rule.windowMs);
    if (expired > 0) entries.splice(0, expired);

    const allowed = entries.length < rule.limit;
    if (allowed && consume) {
      entries.splice(upperBound(entries, nowMs), 0, nowMs);
      if (!log) this.logs.set(key, (log = { entries, windowMs: rule.windowMs }));
      log.windowMs = rule.windowMs;
    } else if (log && entries.length === 0) {
      this.logs.delete(key);
    }
    const count = entries.length;
    const unblock = allowed ? null : entries[count - rule.limit];
    return decide(rule, nowMs, allowed, count, count ? entries[0] : null, unblock ?? null);
  }

  private sweep(nowMs: number, windowMs: number): void {
    if (nowMs - this.lastSweepMs < windowMs) return;
    this.lastSweepMs = nowMs;
    for (const [key, log] of this.logs) {
      const newest = log.entries[log.entries.length - 1];
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
