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

/**
 * Calls `stop` once the process that started this one is gone. `npx svc listen` runs svc under a
 * shell under npm: a SIGTERM to npm ends npm and the shell without passing the signal on, and svc,
 * orphaned, would keep running; its parent id changing (to 1 or a subreaper) is how it notices.
 */
export function onParentGone(stop: () => void, everyMs = 250): void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    stop();
  }, everyMs);
  timer.unref();
}

/**
 * How long a stop may take (docs/operations.md): attempts in flight end within the delivery
 * time-out, a statement within the query time-out, and 5 s more for the rest.
 */
export function stopDeadlineMs(config: { deliveryTimeoutMs: number; dbQueryTimeoutMs: number }): number {
  return config.deliveryTimeoutMs + config.dbQueryTimeoutMs + 5_000;
}

/** What a stop leaves after its workers have stopped: closing connections. */
const AFTER_WORKERS_MS = 2_000;

/**
 * How long from its signal a stop keeps trying to record outcomes while the database is down: a
 * blip is over by then, and the stop ends within ten seconds, the grace `docker stop` gives.
 */
const RECORD_MS = 8_000;

/**
 * Until when (performance.now()) workers stopping from now may keep trying to record the outcomes
 * of their attempts while the database is unavailable, so that the stop still ends in time.
 */
export function recordUntil(config: { deliveryTimeoutMs: number; dbQueryTimeoutMs: number }): number {
  return performance.now() + Math.min(RECORD_MS, stopDeadlineMs(config) - AFTER_WORKERS_MS);
}

/** What a stop waits for, in one line. */
export function waitingLine(pending: { inFlight: number; unrecorded: number }): string {
  return `stopping: waiting for ${pending.inFlight} attempt(s) in flight and ${pending.unrecorded} outcome(s) to record, trying to record for up to ${RECORD_MS / 1000} s while the database is down`;
}

/** What a stop left, in one line, or null when it left nothing. */
export function leftLine(unrecorded: number, leaseMs: number): string | null {
  if (unrecorded === 0) return null;
  return `stopped with ${unrecorded} outcome(s) unrecorded (the database did not answer): those deliveries are sent again, under the same webhook-id, once their lease (SVC_LEASE, ${leaseMs / 1000} s) ends`;
}

/** Exits with status 1 after `ms` unless the process has exited by then. */
export function exitAfter(ms: number, before: () => void): void {
  setTimeout(() => {
    before();
    process.exit(1);
  }, ms).unref();
}
