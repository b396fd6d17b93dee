import { hash, randomInt } from 'node:crypto';
import { crc32 } from 'node:zlib';

/** Credential kinds and their prefixes (docs/api.md#credentials); test credentials carry `test_` after the prefix. */
export const TOKEN_PREFIXES = {
  api_key: 'svc_sk_',
  pat: 'svc_pat_',
} as const;

export type CredentialKind = keyof typeof TOKEN_PREFIXES;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LENGTH = 30;
const CHECKSUM_LENGTH = 6;

function base62(n: number, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

function checksum(body: string): string {
  return base62(crc32(body), CHECKSUM_LENGTH);
}

export function newToken(kind: CredentialKind, test: boolean): string {
  let random = '';
  for (let i = 0; i < RANDOM_LENGTH; i++) random += BASE62[randomInt(62)];
  const body = TOKEN_PREFIXES[kind] + (test ? 'test_' : '') + random;
  return body + checksum(body);
}

export interface ParsedToken {
  kind: CredentialKind;
  test: boolean;
}

const TOKEN_PATTERN = /^svc_(sk|pat)_(test_)?[0-9A-Za-z]{36}$/;

/** Checks format and checksum without touching the database; null for anything malformed. */
export function parseToken(token: string): ParsedToken | null {
  const match = TOKEN_PATTERN.exec(token);
  if (!match) return null;
  const body = token.slice(0, -CHECKSUM_LENGTH);
  if (checksum(body) !== token.slice(-CHECKSUM_LENGTH)) return null;
  return { kind: match[1] === 'sk' ? 'api_key' : 'pat', test: match[2] !== undefined };
}

/**
 * Tokens are stored as SHA-256 hex: unique, indexable, one look-up per request. Every authenticated
 * request hashes its token, so this is the one-shot digest (a third of the time of a Hash object).
 */
export function hashToken(token: string): string {
  return hash('sha256', token, 'hex');
}

/** What lists show instead of the token: the prefix and the first random characters. */
export function displayPrefix(token: string): string {
  const start = token.startsWith('svc_pat_') ? 8 : 7;
  const testLength = token.slice(start).startsWith('test_') ? 5 : 0;
  return token.slice(0, start + testLength + 4);
}
