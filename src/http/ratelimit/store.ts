/**
 * Where rate-limit counters live: this process's memory, or Redis shared by every API process.
 *
 * The algorithm is a sliding-window log: a request is admitted when fewer than `limit` requests
 * were admitted in the `windowMs` before it, so no interval of `windowMs` ever holds more than
 * `limit` admitted requests, wherever it starts (no double burst at a window edge, as fixed windows
 * allow, and no burst-plus-rate as a GCRA with a full burst allows). Refused requests are not
 * counted, so a client that keeps hammering still gets back in as its old requests age out.
 */
export interface RateLimitRule {
  limit: number;
  windowMs: number;
}

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  /** Requests still admissible now, after this one. */
  remaining: number;
  /** Until the oldest counted request leaves the window; on a refusal, until a request is admitted again. */
  resetMs: number;
  /** Until a request is admitted again: 0 when allowed. */
  retryAfterMs: number;
}

/** Reachability of a shared store, reported on each change. */
export type StoreStatus = { state: 'down'; reason: string } | { state: 'up' };

export interface RateLimitStore {
  /**
   * Checks `key` at `nowMs` (time comes from the context's clock, never from the store) and, when
   * `consume` is true and the request is admitted, counts it. With `consume` false it only looks.
   */
  hit(key: string, rule: RateLimitRule, nowMs: number, consume?: boolean): Promise<RateLimitDecision>;
  /**
   * The same as `hit`, answered at once, by stores that never wait (counters in memory), so the
   * request hooks need not make a promise for either of the two limits every request passes.
   */
  hitSync?(key: string, rule: RateLimitRule, nowMs: number, consume?: boolean): RateLimitDecision;
  /** Shared stores report each change between reachable and unreachable; returns an unsubscribe. */
  onStatus?(listener: (status: StoreStatus) => void): () => void;
  /** Shared stores: resolves when the store answers within its time-out, else rejects (GET /readyz). */
  ping?(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The decision for a window that holds `count` requests (after counting this one if it was
 * admitted), given the timestamps of the oldest one and of the one whose expiry readmits requests.
 */
export function decide(
  rule: RateLimitRule,
  nowMs: number,
  allowed: boolean,
  count: number,
  oldestMs: number | null,
  unblockMs: number | null,
): RateLimitDecision {
  const untilOldest = oldestMs === null ? rule.windowMs : Math.max(0, oldestMs + rule.windowMs - nowMs);
  const retryAfterMs = allowed ? 0 : Math.max(1, (unblockMs ?? nowMs) + rule.windowMs - nowMs);
  return {
    allowed,
    limit: rule.limit,
    remaining: Math.max(0, rule.limit - count),
    resetMs: allowed ? untilOldest : retryAfterMs,
    retryAfterMs,
  };
}
