import type { Job } from './job.js';

/** A place in the due rows' order: due time, then id (the index of migrations/017). */
export interface DuePosition {
  due: Date;
  id: string;
}

/** A position is used this long at most; then a claim walks the due rows from their head again. */
export const POSITION_MS = 100;

/**
 * Where a busy worker's next claim starts: right after the last row its previous claim took. Rows
 * are due in (due time, id) order, so what a claim from the head would walk before that place is
 * mostly the index entries of rows taken since (answered ones too, whose old versions stay in the
 * index while any open hold may still see them) and rows other holds keep, each tried and skipped.
 *
 * A row can come due before the position while it is in use: one a hold freed unattempted, one
 * another worker gave back, an ordered row whose older delivery just finished. So the position is
 * dropped when a claim takes fewer rows than it asked (the rows after it ran out), when a hold of
 * this worker frees rows, and after POSITION_MS: such a row waits that long at most.
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
    if (jobs.length < limit) return this.forget();
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

/** Whether `a` comes after `b` in the due rows' order. */
function comesAfter(a: Job, b: Job): boolean {
  const dueA = a.mark.getTime();
  const dueB = b.mark.getTime();
  return dueA > dueB || (dueA === dueB && a.id > b.id);
}
