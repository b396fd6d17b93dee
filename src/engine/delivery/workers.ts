import { setTimeout as sleep } from 'node:timers/promises';
import { createSender } from '../destinations/destinations.js';
import { DeliveryWorker, type DeliveryWorkerOptions, type WorkerDeps } from './worker.js';

export interface Workers {
  /** Attempts in flight now, and outcomes not yet recorded, over all the workers. */
  pending(): { inFlight: number; unrecorded: number };
  /**
   * Resolves once the backlogs a start found have been moved out of the way (lanes.ts): no worker
   * has asked for or written a move for SETTLED_MS since it started, time for a claim to find the
   * next backlog. At `mostMs` at the latest.
   */
  settle(mostMs: number): Promise<void>;
  /** Stops them (worker.ts); resolves to the outcomes they gave up, whose deliveries go again once their lease ends. */
  stop(recordUntil?: number): Promise<number>;
}

/** Quiet long enough for a start's backlog moves to be over (Workers.settle). */
export const SETTLED_MS = 300;

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
    async settle(mostMs: number) {
      const until = performance.now() + mostMs;
      for (;;) {
        const quiet = Math.min(...workers.map((w) => w.backlogQuietFor()));
        const left = until - performance.now();
        if (quiet >= SETTLED_MS || left <= 0) return;
        await sleep(Math.min(left, Math.max(20, SETTLED_MS - quiet)));
      }
    },
    async stop(recordUntil?: number) {
      await Promise.all(workers.map((w) => w.stop(recordUntil)));
      await sender.close();
      return workers.reduce((n, w) => n + w.givenUp, 0);
    },
  };
}
