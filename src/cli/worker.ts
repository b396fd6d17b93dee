import type { Config } from '../config.js';
import { startRetention } from '../ops/retention.js';
import { boundPort, startOpsServer } from '../ops/server.js';
import { openContext } from '../runtime.js';
import { startWorkers } from '../webhooks/engine/worker.js';

export const WORKER_HELP = `svc worker
  Runs webhook delivery workers only, without the HTTP API: SVC_WORKERS loops (at least one) of
  SVC_WORKER_CONCURRENCY attempts each. Start any number of them, on any machines, against one
  PostgreSQL (DATABASE_URL); they share the work and take over rows of a worker that died after
  SVC_LEASE. With SVC_METRICS_PORT, GET /healthz, /readyz and /metrics answer on HOST at that port.
  Retention (SVC_RETENTION) runs here too. SIGINT or SIGTERM stops claiming and lets attempts in
  flight finish.`;

/** `svc worker`: delivery without the API, for scaling deliveries apart from requests. */
export async function runWorker(config: Config): Promise<void> {
  const ctx = await openContext(config);
  const count = Math.max(1, config.workers);
  const report = (error: unknown, during: string) => console.error(`svc worker: ${during} failed: ${(error as Error)?.message ?? String(error)}`);
  const ops = config.metricsPort !== null ? await startOpsServer(ctx, { redis: false }, { port: config.metricsPort, host: config.host }) : null;
  const workers = await startWorkers(ctx, count, report);
  const retention = startRetention(ctx, (error) => report(error, 'retention'));

  const stop = async () => {
    // First: /readyz answers 503 from now on.
    ctx.stopping = true;
    await retention.stop();
    await workers.stop();
    await ops?.close();
    await ctx.db.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
  // Only now: whoever waits for these lines may signal at once, and must find the handlers in place.
  console.log(`svc worker: delivering with ${count} worker(s) of concurrency ${config.workerConcurrency}`);
  if (ops) console.log(`svc worker: health and metrics on http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${boundPort(ops)}`);
}
