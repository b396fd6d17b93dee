import { createSender } from '../destinations/destinations.js';
import { DeliveryWorker, type DeliveryWorkerOptions, type WorkerDeps } from './worker.js';

/** The workers of one process (`svc serve`, `svc worker`), sharing one sender. */
export async function startWorkers(
  deps: WorkerDeps,
  count: number,
  log: Pick<DeliveryWorkerOptions, 'onError' | 'onRecover'>,
): Promise<{ stop(recordUntil?: number): Promise<void> }> {
  const sender = createSender(deps.config);
  const workers = Array.from({ length: count }, () => new DeliveryWorker(deps, { sender, ...log }));
  await Promise.all(workers.map((w) => w.start()));
  return {
    async stop(recordUntil?: number) {
      await Promise.all(workers.map((w) => w.stop(recordUntil)));
      await sender.close();
    },
  };
}
