import { createSender } from '../destinations/destinations.js';
import { DeliveryWorker, type DeliveryWorkerOptions, type WorkerDeps } from './worker.js';

export interface Workers {
  /** Attempts in flight now, and outcomes not yet recorded, over all the workers. */
  pending(): { inFlight: number; unrecorded: number };
  /** Stops them (worker.ts); resolves to the outcomes they gave up, whose deliveries go again once their lease ends. */
  stop(recordUntil?: number): Promise<number>;
}

/** The workers of one process (`svc serve`, `svc worker`), sharing one sender. */
export async function startWorkers(deps: WorkerDeps, count: number, log: Pick<DeliveryWorkerOptions, 'onError' | 'onRecover'>): Promise<Workers> {
  const sender = createSender(deps.config);
  const workers = Array.from({ length: count }, () => new DeliveryWorker(deps, { sender, ...log }));
  await Promise.all(workers.map((w) => w.start()));
  return {
    pending() {
      const all = workers.map((w) => w.pending());
      return { inFlight: all.reduce((n, p) => n + p.inFlight, 0), unrecorded: all.reduce((n, p) => n + p.unrecorded, 0) };
    },
    async stop(recordUntil?: number) {
      await Promise.all(workers.map((w) => w.stop(recordUntil)));
      await sender.close();
      return workers.reduce((n, w) => n + w.givenUp, 0);
    },
  };
}
