const SHAPE = /^(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))?([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?$/;

/** Any other timestamptz text PostgreSQL sends: another zone's offset (to the second, as old dates have), a year before 100. */
function fallback(text: string): Date {
  const m = SHAPE.exec(text);
  if (!m) return new Date(NaN);
  const [, year, month, day, hours, minutes, seconds, fraction = '0', sign, oh, om = '0', os = '0'] = m;
  const at = new Date(Date.UTC(2000, Number(month) - 1, Number(day), Number(hours), Number(minutes), Number(seconds), Number(fraction.padEnd(3, '0').slice(0, 3))));
  at.setUTCFullYear(Number(year));
  const offsetSeconds = (Number(oh) * 3600 + Number(om) * 60 + Number(os)) * (sign === '+' ? 1 : -1);
  return new Date(at.getTime() - offsetSeconds * 1000);
}

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
 * years before 100 or past 9999) goes to the general parser.
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
  const month = digits(text, 5, 7);
  const day = digits(text, 8, 10);
  const hours = digits(text, 11, 13);
  const minutes = digits(text, 14, 16);
  const seconds = digits(text, 17, 19);
  // Years before 100 and anything out of shape (a NaN fails every comparison) go to the general parser.
  if (!(year >= 100 && month >= 1 && month <= 12 && day >= 1 && day <= 31 && hours <= 23 && minutes <= 59 && seconds <= 59 && ms >= 0)) {
    return fallback(text);
  }
  return new Date(daysSinceEpoch(year, month, day) * 86_400_000 + hours * 3_600_000 + minutes * 60_000 + seconds * 1000 + ms);
}

/**
 * Days from 1970-01-01 to a date of the proleptic Gregorian calendar (years from 100 on), by
 * arithmetic: cheaper than Date.UTC, which leaves JavaScript for every call (two per product row).
 */
function daysSinceEpoch(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}
