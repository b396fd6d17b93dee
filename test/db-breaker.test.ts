import { describe, expect, it } from 'vitest';
import { Breaker } from '../src/db/breaker.js';
import { DatabaseUnavailableError } from '../src/db/db.js';

function tryAdmit(breaker: Breaker): boolean {
  try {
    breaker.admit();
    return true;
  } catch {
    return false;
  }
}

describe('the database breaker', () => {
  it('lets everything through while the database answers', () => {
    const breaker = new Breaker();
    for (let i = 0; i < 5; i++) expect(breaker.admit()).toBe(false);
    expect(breaker.down).toBe(false);
  });

  it('refuses at once while down, then lets one probe through at a time, and is up again on its answer', () => {
    let now = 0;
    // No jitter: each wait is its half.
    const breaker = new Breaker(() => 0, () => now);
    breaker.failed(new Error('ECONNREFUSED'));
    expect(breaker.down).toBe(true);
    expect(() => breaker.admit()).toThrow(DatabaseUnavailableError);
    now = 49;
    expect(() => breaker.admit()).toThrow(DatabaseUnavailableError);
    now = 50;
    expect(breaker.admit()).toBe(true);
    // The probe is out: the others still fail at once.
    expect(() => breaker.admit()).toThrow(DatabaseUnavailableError);
    breaker.ok();
    expect(breaker.admit()).toBe(false);
  });

  it('waits 100 ms after the first failure and 200 ms after each further one, each wait drawn between half and all of it', () => {
    for (const [jitter, factor] of [
      [0, 0.5],
      [1, 1],
    ]) {
      let now = 0;
      const breaker = new Breaker(() => jitter, () => now);
      const waits: number[] = [];
      for (let i = 0; i < 8; i++) {
        breaker.failed(new Error('ECONNRESET'));
        const from = now;
        // The first moment a probe is let through.
        while (!tryAdmit(breaker)) now += 1;
        waits.push(now - from);
      }
      expect(waits).toEqual([100, 200, 200, 200, 200, 200, 200, 200].map((w) => w * factor));
    }
  });

  it('tells once when the database goes down and once when it is back, with how long and how many were refused', () => {
    let now = 0;
    const breaker = new Breaker(() => 0, () => now);
    const changes: unknown[] = [];
    breaker.onChange((change) => changes.push(change));
    breaker.ok();
    const cause = new Error('ECONNREFUSED');
    breaker.failed(cause);
    for (let i = 0; i < 3; i++) expect(tryAdmit(breaker)).toBe(false);
    now = 100;
    expect(breaker.admit()).toBe(true);
    breaker.failed(cause);
    now = 1_000;
    expect(breaker.admit()).toBe(true);
    breaker.ok();
    breaker.ok();
    expect(changes).toEqual([{ down: true, cause }, { down: false, downMs: 1_000, refused: 3 }]);
    expect(breaker.refused).toBe(3);
  });

  it('a refusal carries what made the database down', () => {
    const breaker = new Breaker();
    const cause = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    breaker.failed(new DatabaseUnavailableError('ECONNREFUSED', cause));
    expect(breaker.refusal().original).toBe(cause);
  });
});
