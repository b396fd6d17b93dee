import type { Config } from '../config.js';
import { openContext } from '../runtime.js';
import { startWorkers } from '../webhooks/engine/worker.js';

export const WORKER_HELP = `svc worker
  Runs webhook delivery workers only, without the HTTP API: SVC_WORKERS loops (at least one) of
  SVC_WORKER_CONCURRENCY attempts each. Start any number of them, on any machines, against one
  PostgreSQL (DATABASE_URL); they share the work and take over rows of a worker that died after
  SVC_LEASE. SIGINT or SIGTERM stops claiming and lets attempts in flight finish.`;

/** `svc worker`: delivery without the API, for scaling deliveries apart from requests. */
export async function runWorker(config: Config): Promise<void> {
  const ctx = await openContext(config);
  const count = Math.max(1, config.workers);
  const workers = await startWorkers(ctx, count, (error, during) => {
    console.error(`svc worker: ${during} failed: ${(error as Error)?.message ?? String(error)}`);
  });
  console.log(`svc worker: delivering with ${count} worker(s) of concurrency ${config.workerConcurrency}`);

  const stop = async () => {
    await workers.stop();
    await ctx.db.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}
