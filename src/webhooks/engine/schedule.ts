/**
 * The retry schedule (spec 8): attempt 1 right away, then after a failed attempt N the next follows
 * `schedule[N - 1]` later. With the default `5m,30m,2h,5h,10h,12h x5` that is 11 attempts over about
 * three days; a schedule of length L allows L + 1 attempts.
 */
export function maxAttempts(scheduleMs: readonly number[]): number {
  return scheduleMs.length + 1;
}

/** What a failed attempt leads to: another try at `nextAttemptAt`, or `failed` when it was the last. */
export function afterFailure(
  scheduleMs: readonly number[],
  attemptsMade: number,
  attemptedAt: Date,
): { status: 'pending'; nextAttemptAt: Date } | { status: 'failed'; nextAttemptAt: null } {
  if (attemptsMade >= maxAttempts(scheduleMs)) return { status: 'failed', nextAttemptAt: null };
  return { status: 'pending', nextAttemptAt: new Date(attemptedAt.getTime() + scheduleMs[attemptsMade - 1]) };
}

/** When each attempt happens, counted from the first (0, 5m, 35m, 2h35m, ...). */
export function attemptOffsets(scheduleMs: readonly number[]): number[] {
  const offsets = [0];
  for (const delay of scheduleMs) offsets.push(offsets[offsets.length - 1] + delay);
  return offsets;
}
