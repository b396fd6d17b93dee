import { randomBytes } from 'node:crypto';

/** Resource id prefixes; the rest of an id is 10 chars of time and 16 of randomness (Crockford base32). */
export type IdPrefix =
  | 'org' | 'wsp' | 'usr' | 'prd' | 'evt' | 'whe' | 'whd' | 'key' | 'pat' | 'ntf' | 'req';

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
 * Randomness is drawn from the system 4 KiB at a time: one call per id (every request has one)
 * cost more than building the rest of a response. Ids need uniqueness, not secrecy.
 */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let used = 0;

function encodeRandom(length: number): string {
  if (used + length > pool.length) {
    pool = randomBytes(POOL_BYTES);
    used = 0;
  }
  let out = '';
  for (let i = used; i < used + length; i++) out += ALPHABET[pool[i] & 31];
  used += length;
  return out;
}

/** A prefixed id that sorts by creation time, e.g. `prd_01jd3x...`. */
export function newId(prefix: IdPrefix, at: Date = new Date()): string {
  return `${prefix}_${encodeTime(at.getTime())}${encodeRandom(16)}`;
}

/**
 * The time-ordered start of an id (`whd_` + 10 time characters), for ids completed in SQL with 16
 * hex characters of randomness: hex digits are a subset of the alphabet, so the shape is the same.
 */
export function idTimePrefix(prefix: IdPrefix, at: Date): string {
  return `${prefix}_${encodeTime(at.getTime())}`;
}

const ID_PATTERN = /^[a-z]{3}_[0-9a-hjkmnp-tv-z]{26}$/;

/** True when `value` has the shape of an id with this prefix; anything else can never exist. */
export function isId(prefix: IdPrefix, value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(prefix + '_') && ID_PATTERN.test(value);
}
