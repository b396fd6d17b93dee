import { randomBytes } from 'node:crypto';

/** Resource id prefixes; the rest of an id is 10 chars of time and 16 of randomness (Crockford base32). */
export type IdPrefix =
  | 'org' | 'wsp' | 'usr' | 'prd' | 'ord' | 'evt' | 'evb' | 'whe' | 'whd' | 'whr' | 'key' | 'pat' | 'ntf' | 'pdv' | 'req' | 'idk';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

function encodeTime(ms: number): string {
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

/**
 * Randomness is drawn from the system 4 KiB at a time and turned into alphabet characters in one
 * pass: one call per id (every request has one) cost more than building the rest of a response.
 * An id takes its 16 characters as two substrings of 8: substrings that short are copies, so an id
 * never keeps the 4 KiB pool alive.
 */
const POOL_BYTES = 4096;
const ALPHABET_CODES = Buffer.from(ALPHABET, 'latin1');
let pool = '';
let used = 0;

function encodeRandom16(): string {
  if (used + 16 > pool.length) {
    const bytes = randomBytes(POOL_BYTES);
    for (let i = 0; i < bytes.length; i++) bytes[i] = ALPHABET_CODES[bytes[i] & 31];
    pool = bytes.toString('latin1');
    used = 0;
  }
  const out = pool.substring(used, used + 8) + pool.substring(used + 8, used + 16);
  used += 16;
  return out;
}

/** The last prefix and millisecond encoded: ids made in the same millisecond share their start. */
let lastPrefix = '';
let lastMs = -1;
let lastStart = '';

/** A prefixed id that sorts by creation time, e.g. `prd_01jd3x...`. */
export function newId(prefix: IdPrefix, at: Date = new Date()): string {
  const ms = at.getTime();
  if (ms !== lastMs || prefix !== lastPrefix) {
    lastPrefix = prefix;
    lastMs = ms;
    lastStart = idTimePrefix(prefix, at);
  }
  return lastStart + encodeRandom16();
}

/**
 * The time-ordered start of an id (`whd_` + 10 time characters), for ids completed in SQL with 16
 * hex characters of randomness: hex digits are a subset of the alphabet, so the shape is the same.
 */
export function idTimePrefix(prefix: IdPrefix, at: Date): string {
  return `${prefix}_${encodeTime(at.getTime())}`;
}

/** The millisecond an id was made at, read back from its 10 time characters (the inverse of encodeTime). */
export function idTime(id: string): number {
  let ms = 0;
  for (const char of id.slice(id.indexOf('_') + 1, id.indexOf('_') + 11)) ms = ms * 32 + ALPHABET.indexOf(char);
  return ms;
}

const ID_PATTERN = /^[a-z]{3}_[0-9a-hjkmnp-tv-z]{26}$/;

/** True when `value` has the shape of an id with this prefix; anything else can never exist. */
export function isId(prefix: IdPrefix, value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(prefix + '_') && ID_PATTERN.test(value);
}
