/** Pauses after a failed claim while the database stays unreachable: 0.5 s, doubling up to 5 s. */
const BACKOFF_MS = [500, 1000, 2000, 5000];

/**
 * A worker's unexpected faults (the database unreachable, a lost connection), told once per streak:
 * the first failure of each kind is reported, later ones are counted, and the first success after
 * them reports the recovery. Claims back off while the streak lasts.
 */
export class Faults {
  private readonly failing = new Map<string, number>();
  private backoffUntil = 0;
  private claimFailures = 0;

  constructor(
    private readonly onError: (error: unknown, during: string) => void,
    private readonly onRecover: (during: string, failures: number) => void,
  ) {}

  failed(error: unknown, during: string): void {
    const count = this.failing.get(during) ?? 0;
    this.failing.set(during, count + 1);
    if (count === 0) this.onError(error, during);
    if (during === 'claim') {
      this.backoffUntil = performance.now() + BACKOFF_MS[Math.min(this.claimFailures, BACKOFF_MS.length - 1)];
      this.claimFailures++;
    }
  }

  ok(during: string): void {
    if (during === 'claim') this.claimFailures = 0;
    const count = this.failing.get(during);
    if (count === undefined) return;
    this.failing.delete(during);
    this.onRecover(during, count);
  }

  /** Milliseconds to wait before the next claim (0: claim now). */
  claimPause(): number {
    return Math.max(0, this.backoffUntil - performance.now());
  }
}
