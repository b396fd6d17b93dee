import type { Clock } from '../../lib/clock.js';
import { runAttempt, type AttemptDeps } from './attempt.js';
import type { Dispatcher } from './dispatch.js';
import type { Faults } from './faults.js';
import type { Job, Outcome } from './job.js';
import type { SendTimes } from './rate.js';
import type { OutcomeRecorder } from './recorder.js';

/** A handed-over row is attempted only while its lease outlasts the attempt by this much at least. */
const LEASE_MARGIN_MS = 1_000;

/** What the stages of one batch use. */
export interface Stages {
  clock: Clock;
  deliveryTimeoutMs: number;
  rates: SendTimes;
  dispatch: Dispatcher;
  attempt: AttemptDeps;
  recorder: OutcomeRecorder;
  faults: Faults;
}

/**
 * One batch of jobs, stage by stage. A claim or a hand-off took them (claim); each gets the time it
 * may go and is offered to its endpoint's lane, whose turn starts it, keeps it a moment or defers it
 * (admit). As the capacity has room, the dispatcher gives each job whose turn came to `attempt`,
 * and its outcome to `record`.
 */
export async function deliver(stages: Stages, jobs: Job[]): Promise<void> {
  if (jobs.length === 0) return;
  const now = stages.clock.now();
  const times = await sendTimes(stages, jobs, now);
  for (const job of jobs) stages.dispatch.place(job, notBefore(stages, job, times, now));
}

/** Attempts a job whose turn came: sign, send, and the outcome (attempt.ts). */
export function attempt(stages: Pick<Stages, 'attempt'>, job: Job): Promise<Outcome> {
  return runAttempt(stages.attempt, job);
}

/** A job's outcome: written by the hold that took its row, or by the recorder under the row's mark. */
export function record(stages: Pick<Stages, 'recorder'>, job: Job, outcome: Outcome): void {
  if (job.hold) job.hold.finish(job, outcome);
  else stages.recorder.add([outcome]);
}

/** The rate-limited jobs' send times, by job id (rate.ts). */
async function sendTimes(stages: Stages, jobs: Job[], now: Date): Promise<Map<string, Date>> {
  if (!jobs.some((job) => job.rateLimit !== null)) return new Map();
  return stages.rates.assign(jobs, now).catch((error) => {
    stages.faults.failed(error, 'rate');
    // Without a send time, a rate-limited job waits a second rather than risk going over.
    return new Map(jobs.filter((job) => job.rateLimit !== null).map((job) => [job.id, new Date(now.getTime() + 1000)]));
  });
}

/** The earliest a job may go: its send time, or (a lease that could run out during the attempt) deferred at once. */
function notBefore(stages: Stages, job: Job, times: Map<string, Date>, now: Date): Date | null {
  if (leaseTooShort(stages, job, now)) return new Date(now.getTime() + 1);
  return times.get(job.id) ?? null;
}

/** Whether a job taken under a lease could see it run out during an attempt started `now`. */
export function leaseTooShort(stages: Pick<Stages, 'deliveryTimeoutMs'>, job: Job, now: Date): boolean {
  return !job.hold && job.mark.getTime() - now.getTime() < stages.deliveryTimeoutMs + LEASE_MARGIN_MS;
}
