import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { openPostgres } from '../src/db/postgres.js';
import { parseTimestamptz } from '../src/db/timestamps.js';
import { POSTGRES_URL } from './helpers/db.js';

/** The general parser, as JavaScript's own: ISO 8601 with the offset written out. */
const general = (text: string): Date => new Date(text.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00'));
const same = (text: string) => expect(parseTimestamptz(text), text).toEqual(general(text));

describe('timestamptz parsing', () => {
  it('reads the UTC shape by position exactly as the general parser does', () => {
    for (const text of [
      '2026-11-23 11:09:00+00',
      '2026-11-23 11:09:00.8+00',
      '2026-11-23 11:09:00.82+00',
      '2026-11-23 11:09:00.827+00',
      '2026-11-23 11:09:00.827999+00',
      '2024-02-29 23:59:59.999999+00',
      '0100-01-01 00:00:00+00',
      '9999-12-31 23:59:59.999+00',
    ]) same(text);
  });

  it('leaves every other shape to the general parser', () => {
    for (const text of [
      '2026-11-23 11:09:00.5+05:30',
      '2026-11-23 11:09:00-08',
    ]) same(text);
    expect(parseTimestamptz('2026-1x-23 11:09:00+00').getTime()).toBeNaN();
    // Before year 100 (which JavaScript's parser reads as 19xx), and an offset to the second (old local times).
    expect(parseTimestamptz('0099-06-01 12:00:00+00')).toEqual(new Date('0099-06-01T12:00:00Z'));
    expect(parseTimestamptz('0050-03-01 05:53:28+05:53:28')).toEqual(new Date('0050-03-01T00:00:00Z'));
  });

  it('agrees with the general parser on any instant from year 100 to 9999', () => {
    const min = Date.UTC(100, 0, 1);
    const max = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
    fc.assert(
      fc.property(fc.integer({ min, max }), fc.integer({ min: 0, max: 999 }), (ms, micros) => {
        const iso = new Date(ms).toISOString();
        const fraction = `${iso.slice(20, 23)}${String(micros).padStart(3, '0')}`.replace(/0+$/, '');
        same(`${iso.slice(0, 10)} ${iso.slice(11, 19)}${fraction ? `.${fraction}` : ''}+00`);
      }),
      { numRuns: 2000 },
    );
  });

  it('reads what PostgreSQL sends, in the service\'s UTC sessions and in others', async () => {
    const values = ['2026-11-23 11:09:00.827491+00', '2026-11-23 11:09:00+00', '0050-03-01 00:00:00+00'];
    const read = async (url: string) => {
      const db = await openPostgres({ url });
      try {
        return await db.query<{ at: Date | number; text: string }>(
          'SELECT v::timestamptz AS at, v::timestamptz::text AS text FROM unnest($1::text[]) WITH ORDINALITY AS t(v, n) ORDER BY n',
          [values],
        );
      } finally {
        await db.close();
      }
    };
    const utc = await read(POSTGRES_URL);
    expect(utc[0].text).toBe('2026-11-23 11:09:00.827491+00');
    expect(utc.map((row) => row.at)).toEqual(utc.map((row) => general(row.text)));
    expect(utc[0].at).toEqual(new Date('2026-11-23T11:09:00.827Z'));
    const elsewhere = await read(`${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent('-c TimeZone=Asia/Kolkata')}`);
    expect(elsewhere[0].text).toBe('2026-11-23 16:39:00.827491+05:30');
    expect(elsewhere.map((row) => row.at)).toEqual(utc.map((row) => row.at));
  });
});
