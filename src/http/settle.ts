/**
 * Runs a hook's step that finishes at once or returns a promise, then calls the callback hook's
 * `done`. Hooks written this way make no promise when nothing waits (see http/auth/authenticate.ts).
 */
export function settle(step: () => void | Promise<void>, done: (error?: Error) => void): void {
  let pending: void | Promise<void>;
  try {
    pending = step();
  } catch (error) {
    return done(error as Error);
  }
  if (pending) pending.then(() => done(), done);
  else done();
}
