import fc from 'fast-check';
import { expect } from 'vitest';
import type { RateLimitStore } from '../../src/http/ratelimit/store.js';

const WINDOW = 60_000;

/** Random request sequences: a limit, then steps of (clock advance, count or only look). */
export const sequences = fc.tuple(
  fc.integer({ min: 1, max: 6 }),
  fc.array(fc.tuple(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 2_000 }), fc.integer({ min: 0, max: 70_000 })), fc.boolean()), {
    maxLength: 120,
  }),
);

/**
 * Replays a sequence against `store` and checks each decision against the definition of the
 * sliding window (admit when fewer than `limit` admissions lie in the 60 s before now), and that no
 * interval of 60 s ever holds more than `limit` admissions.
 */
export async function checkAgainstModel(store: RateLimitStore, key: string, [limit, steps]: [number, [number, boolean][]]): Promise<void> {
  const rule = { limit, windowMs: WINDOW };
  const admitted: number[] = [];
  let now = 1_700_000_000_000;
  for (const [advance, consume] of steps) {
    now += advance;
    const inWindow = admitted.filter((t) => t > now - WINDOW);
    const decision = await store.hit(key, rule, now, consume);
    expect(decision.allowed).toBe(inWindow.length < limit);
    const counted = inWindow.length + (decision.allowed && consume ? 1 : 0);
    expect(decision.remaining).toBe(Math.max(0, limit - counted));
    if (decision.allowed && consume) admitted.push(now);
    if (!decision.allowed) {
      // Admitted again exactly when enough of the window has aged out.
      const unblock = inWindow[inWindow.length - limit] + WINDOW;
      expect(decision.retryAfterMs).toBe(unblock - now);
    }
  }
  for (const start of admitted) {
    expect(admitted.filter((t) => t >= start && t < start + WINDOW).length).toBeLessThanOrEqual(limit);
  }
}
