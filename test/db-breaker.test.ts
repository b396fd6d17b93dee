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
    now = 124;
    expect(() => breaker.admit()).toThrow(DatabaseUnavailableError);
    now = 125;
    expect(breaker.admit()).toBe(true);
    // The probe is out: the others still fail at once.
    expect(() => breaker.admit()).toThrow(DatabaseUnavailableError);
    breaker.ok();
    expect(breaker.admit()).toBe(false);
  });

  it('waits longer after each failed probe, up to 5 s, and each wait is drawn between half and all of it', () => {
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
      expect(waits).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000, 5000].map((w) => w * factor));
    }
  });

  it('a refusal carries what made the database down', () => {
    const breaker = new Breaker();
    const cause = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    breaker.failed(new DatabaseUnavailableError('ECONNREFUSED', cause));
    expect(breaker.refusal().original).toBe(cause);
  });
});
