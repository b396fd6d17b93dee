/**
 * The retry schedule (docs/delivery.md#retry-schedule): attempt 1 right away, then after a failed attempt N the next follows
 * `schedule[N - 1]` later. With the default `5m,30m,2h,5h,10h,12h x5` that is 11 attempts over about
 * three days; a schedule of length L allows L + 1 attempts.
 */
export function maxAttempts(scheduleMs: readonly number[]): number {
  return scheduleMs.length + 1;
}

/**
 * What a failed attempt leads to: another try at `nextAttemptAt`, or `failed` when it was the last.
 * A receiver that asked to be left alone for `retryAfterMs` (429 or 503 with `Retry-After`) is not
 * tried again before then: the next attempt comes at the later of the two times, the wait counted up
 * to the schedule's longest delay. A shorter wait never brings an attempt forward.
 */
export function afterFailure(
  scheduleMs: readonly number[],
  attemptsMade: number,
  attemptedAt: Date,
  retryAfterMs: number | null = null,
): { status: 'pending'; nextAttemptAt: Date } | { status: 'failed'; nextAttemptAt: null } {
  if (attemptsMade >= maxAttempts(scheduleMs)) return { status: 'failed', nextAttemptAt: null };
  const scheduled = scheduleMs[attemptsMade - 1];
  const asked = retryAfterMs === null ? 0 : Math.min(retryAfterMs, Math.max(...scheduleMs));
  return { status: 'pending', nextAttemptAt: new Date(attemptedAt.getTime() + Math.max(scheduled, asked)) };
}

/** When each attempt happens, counted from the first (0, 5m, 35m, 2h35m, ...). */
export function attemptOffsets(scheduleMs: readonly number[]): number[] {
  const offsets = [0];
  for (const delay of scheduleMs) offsets.push(offsets[offsets.length - 1] + delay);
  return offsets;
}

/**
 * The wait a 429 or 503 answer asks for in its `Retry-After` header (RFC 9110 10.2.3): a number of
 * seconds or an HTTP date. Null for other statuses, a missing header or a value that is neither.
 */
export function retryAfterMs(status: number | null, headers: Record<string, string> | null, now: Date): number | null {
  if ((status !== 429 && status !== 503) || !headers) return null;
  const value = headers['retry-after']?.trim();
  if (!value) return null;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  if (Number.isNaN(at) || !/[a-z]/i.test(value)) return null;
  return Math.max(0, at - now.getTime());
}
