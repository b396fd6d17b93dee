import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toIso } from '../src/lib/iso.js';

describe('toIso', () => {
  it('writes what toISOString writes, for any time from year 0 to 9999', () => {
    const first = Date.parse('0000-01-01T00:00:00.000Z');
    const last = Date.parse('9999-12-31T23:59:59.999Z');
    fc.assert(
      fc.property(fc.integer({ min: first, max: last }), (ms) => {
        expect(toIso(new Date(ms))).toBe(new Date(ms).toISOString());
      }),
      { numRuns: 20_000 },
    );
  });

  it('is right at the edges of days, years and its range, and for times in the same day in any order', () => {
    const times = [
      '1969-12-31T23:59:59.999Z', '1970-01-01T00:00:00.000Z', '2024-02-29T12:00:00.001Z', '2026-12-31T23:59:59.999Z',
      '2027-01-01T00:00:00.000Z', '2026-11-23T09:05:03.040Z', '2026-11-23T00:00:00.000Z', '2026-11-23T23:59:59.999Z',
      '0000-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '0001-03-01T00:00:00.500Z',
    ];
    for (const text of times) expect(toIso(new Date(text))).toBe(text);
  });

  it('leaves years outside 0000-9999 and invalid dates to toISOString', () => {
    for (const ms of [Date.parse('0000-01-01T00:00:00.000Z') - 1, Date.parse('9999-12-31T23:59:59.999Z') + 1, 8.64e15, -8.64e15]) {
      expect(toIso(new Date(ms))).toBe(new Date(ms).toISOString());
    }
    expect(toIso(new Date(-1))).toBe('1969-12-31T23:59:59.999Z');
    expect(() => toIso(new Date(NaN))).toThrow(RangeError);
  });
});
