/**
 * How `svc serve` and `svc worker` stop: on the first SIGINT or SIGTERM, from the moment they begin.
 * A signal that comes while the process is starting (the embedded PostgreSQL server, migrations)
 * stops it once it has started, so the server it runs is never left behind. Later signals are
 * ignored, not fatal: a terminal's Ctrl-C reaches svc and also `npm start`'s script, which passes it
 * on, and a second SIGINT must not cut the stop short. The stop's deadline (exitAfter) bounds it.
 */
export function stopSignals(): { ready(stop: (signal: NodeJS.Signals) => Promise<void>): boolean } {
  let received: NodeJS.Signals | null = null;
  let stop: ((signal: NodeJS.Signals) => Promise<void>) | null = null;
  const on = (signal: NodeJS.Signals) => {
    if (received) return;
    received = signal;
    if (stop) void stop(signal);
  };
  process.on('SIGINT', on);
  process.on('SIGTERM', on);
  return {
    /** The process has started: stops now if a signal came meanwhile (true), else on the first one. */
    ready(handler) {
      stop = handler;
      if (received) void handler(received);
      return received !== null;
    },
  };
}

/** Exits with status 1 after `ms` unless the process has exited by then. */
export function exitAfter(ms: number, before: () => void): void {
  setTimeout(() => {
    before();
    process.exit(1);
  }, ms).unref();
}
