/**
 * Example values the document shows, so that generated samples and clients read like real
 * traffic rather than "string" and 0. One place, so that an order's example names the product of
 * the product's example.
 */

/** The random part of every example id: 26 characters of the ids' alphabet (lib/ids.ts). */
const EXAMPLE_ID_BODY: Record<string, string> = {
  prd: '01jq2m8v3y7r5t9k1x4c6b0n2d',
  ord: '01jq2m9c4h8w2s6p0z3f7a1k5e',
  evt: '01jq2m9d0r4t8y2b6n0c4x8v2q',
  whe: '01jq2m7a5d9g3k7n1r5v9z3c7f',
  whd: '01jq2m9d1s5w9a3e7h1m5q9t3x',
  whr: '01jq2m9f2t6x0c4g8k2p6s0w4z',
  wsp: '01jq2m6b8e2h6m0q4t8x2a6d0g',
  org: '01jq2m6a7d1g5k9p3s7w1z5c9f',
  usr: '01jq2m6c9f3j7n1r5v9y3b7e1h',
  key: '01jq2m7b6e0h4m8q2t6x0a4d8g',
  pat: '01jq2m7c7f1j5n9r3v7y1b5e9h',
  ntf: '01jq2m9g3v7z1d5h9m3q7t1x5b',
  req: '01jq2m9h4w8a2e6j0n4r8v2y6c',
};

export function exampleId(prefix: string): string {
  return `${prefix}_${EXAMPLE_ID_BODY[prefix] ?? '01jq2m8v3y7r5t9k1x4c6b0n2d'}`;
}

export const EXAMPLE_TIME = '2026-11-25T14:03:07.123Z';
export const EXAMPLE_WORKSPACE_ID = exampleId('wsp');
export const EXAMPLE_PRODUCT_NAME = 'Espresso beans, 1 kg';
export const EXAMPLE_EMAIL = 'ada@example.com';
export const EXAMPLE_PAGE = 'eyJrIjoiMjAyNi0xMS0yNVQxNDowMzowNy4xMjNaIn0.3q2-7w';
export const EXAMPLE_PAGE_URL = `https://api.example.com/v1/products?limit=20&page=${EXAMPLE_PAGE}`;
