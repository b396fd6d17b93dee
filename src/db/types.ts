import type postgres from 'postgres';
import { arrayLiteral, type ArrayValue } from './arrays.js';
import { parseTimestamptz } from './timestamps.js';

/**
 * How values cross between JavaScript and PostgreSQL. Every parameter is sent as text, converted
 * here: PostgreSQL reads the text as the type the statement gives the parameter (`$1::text[]`, a
 * column's type), so a statement means the same whatever JavaScript value it is given.
 */
export function toText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return `\\x${Buffer.from(value).toString('hex')}`;
  if (Array.isArray(value)) return arrayLiteral(value.map((v) => (v === null || v === undefined || typeof v === 'number' || typeof v === 'boolean' ? (v ?? null) : toText(v))) as ArrayValue[]);
  return JSON.stringify(value);
}

/**
 * A one-dimensional array's text (`{1,NULL,"a \"b\""}`) as a JavaScript array, each element read by
 * `element`; NULL (unquoted) is null.
 */
export function parseArray<T>(text: string, element: (text: string) => T): (T | null)[] {
  const out: (T | null)[] = [];
  if (text.length <= 2) return out;
  let i = 1;
  while (i < text.length - 1) {
    if (text[i] === '"') {
      let value = '';
      i++;
      while (text[i] !== '"') {
        if (text[i] === '\\') i++;
        value += text[i++];
      }
      out.push(element(value));
      i += 2;
    } else {
      let end = text.indexOf(',', i);
      if (end === -1) end = text.length - 1;
      const raw = text.slice(i, end);
      out.push(raw === 'NULL' ? null : element(raw));
      i = end + 1;
    }
  }
  return out;
}

const same = (text: string) => text;
const number = (text: string) => Number(text);
const boolean = (text: string) => text === 't';
const json = (text: string) => JSON.parse(text) as unknown;
const bytes = (text: string) => Buffer.from(text.slice(2), 'hex');

/** Result parsers by type oid; a type not listed arrives as its text (numeric, for one, keeps its precision that way). */
const PARSERS: Record<number, (text: string) => unknown> = {
  16: boolean,
  17: bytes,
  20: number, // int8: every value the service stores fits in 2^53
  21: number,
  23: number,
  26: number,
  700: number,
  701: number,
  114: json,
  3802: json,
  1184: parseTimestamptz,
};

/** Arrays of the types above, by the array type's oid. */
const ARRAYS: Record<number, number> = { 1000: 16, 1001: 17, 1016: 20, 1005: 21, 1007: 23, 1021: 700, 1022: 701, 199: 114, 3807: 3802, 1185: 1184, 1009: 25, 1015: 1043 };

/**
 * The `types` option of postgres.js: the parsers above, and for every type postgres.js would
 * otherwise serialise itself (booleans as `t`/`f`, JSON stringified again, ...), the text made by
 * toText as it is.
 */
export function driverTypes(): Record<string, postgres.PostgresType> {
  const types: Record<string, postgres.PostgresType> = {};
  for (const [oid, parse] of Object.entries(PARSERS)) types[`oid${oid}`] = { to: Number(oid), from: [Number(oid)], serialize: same, parse };
  for (const [oid, of] of Object.entries(ARRAYS)) {
    const element = PARSERS[of] ?? same;
    types[`oid${oid}`] = { to: Number(oid), from: [Number(oid)], serialize: same, parse: (text: string) => parseArray(text, element) };
  }
  // The remaining types postgres.js serialises by default: text, the numbers, dates and times.
  for (const oid of [0, 25, 1043, 1082, 1114]) types[`text${oid}`] = { to: oid, from: [oid], serialize: same, parse: same };
  return types;
}
