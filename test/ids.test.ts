import { describe, expect, it } from 'vitest';
import { idTime, idTimePrefix, isId, newId } from '../src/lib/ids.js';

describe('ids', () => {
  it('have the prefix, 10 characters of time and 16 of randomness from the alphabet', () => {
    const at = new Date('2026-11-23T12:00:00.000Z');
    const id = newId('prd', at);
    expect(id).toMatch(/^prd_[0-9a-hjkmnp-tv-z]{26}$/);
    expect(isId('prd', id)).toBe(true);
    expect(isId('evt', id)).toBe(false);
    expect(id.startsWith(idTimePrefix('prd', at))).toBe(true);
  });

  it('are unique within one millisecond, across refills of the random pool', () => {
    const at = new Date('2026-11-23T12:00:00.000Z');
    // 4 KiB of randomness serves 256 ids: 5,000 ids draw on it about 20 times.
    const ids = Array.from({ length: 5000 }, () => newId('req', at));
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids.map((id) => id.slice(0, 14))).size).toBe(1);
  });

  it('sort by time, and the prefix of each id is its own when prefixes alternate', () => {
    const times = [0, 1, 31, 32, 1_000, 1_795_000_000_000, 1_795_000_000_001].map((ms) => new Date(ms));
    const ids = times.flatMap((at) => [newId('evt', at), newId('whd', at)]);
    const events = ids.filter((id) => id.startsWith('evt_'));
    const deliveries = ids.filter((id) => id.startsWith('whd_'));
    expect(events).toHaveLength(times.length);
    expect(deliveries).toHaveLength(times.length);
    expect([...events].sort()).toEqual(events);
    expect(events.map((id) => id.slice(4, 14))).toEqual(deliveries.map((id) => id.slice(4, 14)));
  });

  it('give back the millisecond they were made at', () => {
    for (const ms of [0, 1, 31, 32, 1_000, 1_795_000_000_000, 1_795_000_000_001, 32 ** 10 - 1]) {
      expect(idTime(newId('evt', new Date(ms)))).toBe(ms);
    }
  });
});
