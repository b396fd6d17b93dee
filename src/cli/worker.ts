import type { Config } from '../lib/config.js';
import { startBackground } from '../server/background.js';
import { exceptOutages, logOutages } from '../server/outages.js';
import { boundPort, startOpsServer } from '../server/metrics-server.js';
import { startTracing, stopTracing } from '../ops/tracing/start.js';
import { openContext } from '../server/runtime.js';
import { startWorkers } from '../engine/delivery/workers.js';
import { exitAfter, leftLine, recordUntil, stopDeadlineMs, stopSignals, waitingLine } from './signals.js';

export const WORKER_HELP = `svc worker
  Runs webhook delivery workers only, without the HTTP API: SVC_WORKERS loops (at least one), each
  with up to SVC_WORKER_CONCURRENCY attempts in flight (fewer while the process is overloaded). Start any number of them, on any machines, against one
  PostgreSQL (DATABASE_URL); they share the work and take over rows of a worker that died after
  SVC_LEASE. With SVC_METRICS_PORT, GET /healthz, /readyz and /metrics answer on HOST at that port.
  Retention (SVC_RETENTION), the clean-up of expired idempotency keys, bulk webhook recoveries, the
  endpoint statistics rollup and Web Push messages of notifications run here too. SIGINT or SIGTERM
  stops claiming and lets attempts in flight finish.
  Without DATABASE_URL it uses the embedded server of SVC_DATA_DIR: the one a running svc serve
  started, or else one of its own for as long as it runs.`;

/** `svc worker`: delivery without the API, for scaling deliveries apart from requests. */
export async function runWorker(config: Config): Promise<void> {
  const signals = stopSignals();
  // Nothing is loaded unless OTEL_* settings ask for traces.
  await startTracing();
  const ctx = await openContext(config);
  const count = Math.max(1, config.workers);
  logOutages(ctx.db, (_fields, line) => console.error(`svc worker: ${line}`));
  // A database outage is logged once when it begins and once when it ends, not by every job it stops.
  const report = exceptOutages((error: unknown, during: string) => console.error(`svc worker: ${during} failed: ${(error as Error)?.message ?? String(error)}`));
  const ops = config.metricsPort !== null ? await startOpsServer(ctx, { redis: false }, { port: config.metricsPort, host: config.host }) : null;
  const workers = await startWorkers(ctx, count, {
    onError: (error, during) => report(error, `${during}; retrying`),
    onRecover: (during, failures) => console.error(`svc worker: ${during} works again after ${failures} failure(s)`),
  });
  const background = startBackground(ctx, report);
  ctx.recoveries.start((error) => report(error, 'webhook recovery batch'));
  ctx.push.start(report);
  // Events it writes (an endpoint auto-disabled) get their place in the log here too.
  await ctx.sequencer.start();

  const stop = async () => {
    // First: /readyz answers 503 from now on.
    ctx.readiness.stop();
    exitAfter(stopDeadlineMs(config), () => console.error('svc worker: stop did not finish in time: exiting'));
    const until = recordUntil(config);
    console.error(`svc worker: ${waitingLine(workers.pending())}`);
    await background.stop();
    await ctx.recoveries.stop();
    const left = leftLine(await workers.stop(until), config.leaseMs);
    if (left) console.error(`svc worker: ${left}`);
    await ctx.push.stop();
    await ctx.sequencer.stop();
    await ops?.close();
    await ctx.db.close();
    await stopTracing().catch((error) => report(error, 'exporting the last spans'));
    process.exit(0);
  };
  if (signals.ready(stop)) return;
  // Only now: whoever waits for these lines may signal at once, and must find the handlers in place.
  console.log(`svc worker: delivering with ${count} worker(s) of at most ${config.workerConcurrency} attempts in flight each`);
  if (ops) console.log(`svc worker: health and metrics on http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${boundPort(ops)}`);
}
