/**
 * A background job of `svc serve` and `svc worker` (retention, the idempotency-key clean-up):
 * `firstMs` after start, then `intervalMs` after each run ends, so runs never overlap. `run` is
 * told when a stop has begun, to end between two batches; stop() waits for a run in progress.
 */
export function startPeriodic(
  run: (stopped: () => boolean) => Promise<unknown>,
  timing: { firstMs: number; intervalMs: number },
  onError: (error: unknown) => void,
): { stop(): Promise<void> } {
  let stopped = false;
  let running: Promise<unknown> | null = null;
  let timer: NodeJS.Timeout | null = null;
  const schedule = (ms: number) => {
    timer = setTimeout(() => {
      running = run(() => stopped)
        .catch(onError)
        .finally(() => {
          running = null;
          if (!stopped) schedule(timing.intervalMs);
        });
    }, ms);
    timer.unref();
  };
  schedule(timing.firstMs);
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
