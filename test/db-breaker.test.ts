import { describe, expect, it } from 'vitest';
import { Breaker } from '../src/db/breaker.js';
import { DatabaseUnavailableError } from '../src/db/db.js';

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the database breaker', () => {
  it('lets everything through while the database answers', () => {
    const breaker = new Breaker();
    for (let i = 0; i < 5; i++) expect(breaker.admit()).toBe(false);
    expect(breaker.down).toBe(false);
  });

  it('refuses at once while down, then lets one probe through at a time, and is up again on its answer', async () => {
    // No jitter: each wait is its half.
    const breaker = new Breaker(() => 0);
    breaker.failed(new Error('ECONNREFUSED'));
    expect(breaker.down).toBe(true);
    expect(() => breaker.admit()).toThrow(DatabaseUnavailableError);
    await wait(130);
    expect(breaker.admit()).toBe(true);
    // The probe is out: the others still fail at once.
    expect(() => breaker.admit()).toThrow(DatabaseUnavailableError);
    breaker.ok();
    expect(breaker.admit()).toBe(false);
  });

  it('waits longer after each failed probe, up to a bound, and each wait is drawn between half and all of it', async () => {
    const halves = new Breaker(() => 0);
    const fulls = new Breaker(() => 1);
    const until = (breaker: Breaker) => {
      const started = performance.now();
      return async () => {
        while (performance.now() - started < 10_000) {
          try {
            breaker.admit();
            return performance.now() - started;
          } catch {
            await wait(5);
          }
        }
        throw new Error('never admitted');
      };
    };
    const waits: number[][] = [];
    for (const breaker of [halves, fulls]) {
      const measured: number[] = [];
      for (let i = 0; i < 3; i++) {
        breaker.failed(new Error('ECONNRESET'));
        measured.push(await until(breaker)());
      }
      waits.push(measured);
    }
    // 250 ms doubling: 125/250/500 ms with the least jitter, 250/500/1000 ms with the most.
    const [least, most] = waits;
    expect(least[0]).toBeGreaterThanOrEqual(120);
    expect(least[1]).toBeGreaterThanOrEqual(245);
    expect(least[2]).toBeGreaterThanOrEqual(495);
    expect(most[2]).toBeGreaterThanOrEqual(995);
    expect(most[2]).toBeLessThan(1_300);
    for (let i = 0; i < 3; i++) expect(most[i]).toBeGreaterThan(least[i] * 1.5);
  });

  it('a refusal carries what made the database down', () => {
    const breaker = new Breaker();
    const cause = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    breaker.failed(new DatabaseUnavailableError('ECONNREFUSED', cause));
    expect(breaker.refusal().original).toBe(cause);
  });
});
