import type { Availability, Db } from '../db/db.js';
import { DatabaseUnavailableError } from '../db/db.js';

/** What made the database down, in a few words: the driver's code or reason, never an address or a credential. */
function reasonOf(cause: unknown): string {
  const original = cause instanceof DatabaseUnavailableError ? cause.original : cause;
  const code = (original as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  return cause instanceof DatabaseUnavailableError ? cause.reason : 'unknown';
}

/** One line, for a log or a console. */
export function describeAvailability(change: Availability): string {
  if (change.down) return `database down (${reasonOf(change.cause)}): what needs it is refused at once until it answers again`;
  return `database up again after ${(change.downMs / 1000).toFixed(1)} s; ${change.refused} statement(s) refused meanwhile`;
}

/**
 * Logs the database's outages: one line when it goes down and one when it comes back (how long,
 * how many statements were refused), instead of one per refused request; the count is also
 * `svc_db_refused_statements_total`.
 */
export function logOutages(db: Db, warn: (fields: Record<string, unknown>, line: string) => void): void {
  db.onAvailability((change) => {
    const fields = change.down ? { reason: reasonOf(change.cause) } : { downMs: Math.round(change.downMs), refused: change.refused };
    warn(fields, describeAvailability(change));
  });
}

/**
 * A background job's failure report that leaves out failures of a database known to be down: the
 * outage has its own two lines (logOutages), and a job that runs every few seconds would otherwise
 * log a stack each time. Every other failure is reported as it comes.
 */
export function exceptOutages<A extends unknown[]>(report: (error: unknown, ...rest: A) => void): (error: unknown, ...rest: A) => void {
  return (error, ...rest) => {
    if (!(error instanceof DatabaseUnavailableError)) report(error, ...rest);
  };
}
