import pg from 'pg';

const fallback = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ, 'text') as (text: string) => Date;

const digits = (text: string, from: number, to: number): number => {
  let n = 0;
  for (let i = from; i < to; i++) {
    const d = text.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return NaN;
    n = n * 10 + d;
  }
  return n;
};

/**
 * timestamptz text as a Date. Sessions run in UTC (postgres.ts), so PostgreSQL sends
 * `YYYY-MM-DD HH:MM:SS[.ffffff]+00`; that shape is read by position, which is several times
 * cheaper than the general parser's regular expressions (a page of 20 products holds 40 timestamps,
 * and their parsing was the largest part of a list's own cost). Anything else (another time zone,
 * infinity, BC, years before 100 or past 9999) goes to the general parser.
 */
export function parseTimestamptz(text: string): Date {
  const n = text.length;
  if (n < 22 || n > 29 || text[4] !== '-' || text[10] !== ' ' || text[n - 3] !== '+' || text[n - 2] !== '0' || text[n - 1] !== '0') {
    return fallback(text);
  }
  let ms = 0;
  if (n > 22) {
    if (text[19] !== '.') return fallback(text);
    // Milliseconds: the first three digits of the fraction, which is what a Date keeps.
    const end = Math.min(n - 3, 23);
    ms = digits(text, 20, end) * 10 ** (23 - end);
  }
  const year = digits(text, 0, 4);
  // Date.UTC reads years 0-99 as 1900-1999.
  if (!(year >= 100)) return fallback(text);
  const time = Date.UTC(
    year,
    digits(text, 5, 7) - 1,
    digits(text, 8, 10),
    digits(text, 11, 13),
    digits(text, 14, 16),
    digits(text, 17, 19),
    ms,
  );
  return Number.isNaN(time) ? fallback(text) : new Date(time);
}
