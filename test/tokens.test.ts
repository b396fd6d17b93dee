import { describe, expect, it } from 'vitest';
import { displayPrefix, hashToken, newToken, parseToken } from '../src/lib/tokens.js';

describe('credential tokens', () => {
  it('are stored as the SHA-256 hex of the whole token', () => {
    // FIPS 180-2 test vector: the stored form must never change, or every issued credential stops working.
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    const token = newToken('api_key', false);
    expect(hashToken(token)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashToken(token)).not.toBe(hashToken(newToken('api_key', false)));
  });

  it('carry their kind and a checksum that catches a changed character', () => {
    const token = newToken('pat', true);
    expect(token).toMatch(/^svc_pat_test_[0-9A-Za-z]{36}$/);
    expect(parseToken(token)).toEqual({ kind: 'pat', test: true });
    expect(parseToken(newToken('api_key', false))).toEqual({ kind: 'api_key', test: false });
    const last = token.at(-1)!;
    expect(parseToken(token.slice(0, -1) + (last === 'a' ? 'b' : 'a'))).toBeNull();
    expect(parseToken(token.slice(0, 20))).toBeNull();
    expect(displayPrefix(token)).toMatch(/^svc_pat_test_/);
  });
});
