import type { Config } from '../config.js';
import { openContext } from '../runtime.js';
import { startWorkers } from '../webhooks/engine/worker.js';
import { UsageError } from './args.js';
import { exitAfter } from './serve.js';

export const WORKER_HELP = `svc worker [--embedded]
  Runs webhook delivery workers only, without the HTTP API: SVC_WORKERS loops (at least one) of
  SVC_WORKER_CONCURRENCY attempts each. Start any number of them, on any machines, against one
  PostgreSQL (DATABASE_URL); they share the work and take over rows of a worker that died after
  SVC_LEASE. SIGINT or SIGTERM stops claiming and lets attempts in flight finish.
  Without DATABASE_URL it refuses to start: the embedded database in SVC_DATA_DIR belongs to the
  one process that opened it (svc serve delivers from it itself). --embedded runs on it anyway,
  when no server uses that folder.`;

/** `svc worker`: delivery without the API, for scaling deliveries apart from requests. */
export async function runWorker(config: Config, options: { embedded: boolean }): Promise<void> {
  if (!config.databaseUrl && !options.embedded) {
    throw new UsageError(
      `svc worker needs DATABASE_URL (PostgreSQL): the embedded database in ${config.dataDir} is delivered by the svc serve that opens it; pass --embedded to use it anyway`,
    );
  }
  const ctx = await openContext(config);
  const count = Math.max(1, config.workers);
  const workers = await startWorkers(ctx, count, {
    onError: (error, during) => console.error(`svc worker: ${during} failed: ${(error as Error)?.message ?? String(error)}; retrying`),
    onRecover: (during, failures) => console.error(`svc worker: ${during} works again after ${failures} failure(s)`),
  });
  console.log(`svc worker: delivering with ${count} worker(s) of concurrency ${config.workerConcurrency}`);

  const stop = async () => {
    exitAfter(config.deliveryTimeoutMs + config.dbQueryTimeoutMs + 5_000, () => console.error('svc worker: stop did not finish in time: exiting'));
    await workers.stop();
    await ctx.db.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}
