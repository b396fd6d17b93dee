/** What withDeadline rejects with once its time has passed. */
export class DeadlineError extends Error {}

/** `promise`, or a DeadlineError once `ms` have passed without it settling (the work itself goes on). */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
