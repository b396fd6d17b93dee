import type { DuePosition } from './claim.js';
import type { Job } from './job.js';

/** A position is used this long at most; then a claim walks the due rows from their head again. */
export const POSITION_MS = 100;

/**
 * Where a busy worker's next held claim starts: right after the last row its previous claim took
 * (claimLocked's `after`). Rows are due in (due time, id) order, so everything before that place
 * was taken or looked at already: what a claim from the head would walk there is mostly the index
 * entries of rows taken since (answered ones included, whose old versions stay in the index while
 * any open claim may still see them) and rows other claims hold, each tried and skipped: in the
 * delivery benchmark, two thirds of the index entries a claim read (migrations/017). Cheap buffer
 * hits on one worker; the walk grows with the rows every claim holds.
 *
 * A row can come due before the position while it is in use: one freed unattempted by a claim that
 * ended (due as it was), one another worker skipped or gave back, an ordered row whose older
 * delivery just finished. So the position is dropped whenever a claim takes fewer rows than it
 * asked (the rows after it ran out), when this worker's claim frees rows, and after POSITION_MS: such
 * a row waits that long at most, and only while the worker stays busy.
 */
export class ClaimPosition {
  private position: DuePosition | null = null;
  private since = 0;

  /** Where the next claim starts at `nowMs` (performance.now()): null for the head. */
  current(nowMs: number): DuePosition | null {
    if (this.position && nowMs - this.since > POSITION_MS) this.position = null;
    return this.position;
  }

  /** A claim asked for `limit` rows and took `jobs`: the next one starts after the last of them. */
  took(jobs: Job[], limit: number, nowMs: number): void {
    if (jobs.length === 0 || jobs.length < limit) return this.forget();
    let last = jobs[0];
    for (const job of jobs) if (comesAfter(job, last)) last = job;
    if (!this.position) this.since = nowMs;
    this.position = { due: last.mark, id: last.id };
  }

  /** The next claim starts at the head. */
  forget(): void {
    this.position = null;
  }
}

/** Whether `a` comes after `b` in the due rows' order: due time, then id. */
function comesAfter(a: Job, b: Job): boolean {
  const dueA = a.mark.getTime();
  const dueB = b.mark.getTime();
  return dueA > dueB || (dueA === dueB && a.id > b.id);
}
