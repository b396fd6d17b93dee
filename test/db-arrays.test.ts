import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { arrayLiteral } from '../src/db/arrays.js';
import { openTestDb, type TestDb } from './helpers/db.js';

describe('array literals', () => {
  let testDb: TestDb;
  beforeAll(async () => {
    testDb = await openTestDb();
  });
  afterAll(() => testDb.close());

  it('give back every text as it was, nulls included', async () => {
    const awkward = fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 30 }),
      fc.string({ unit: fc.constantFrom('"', '\\', '{', '}', ',', ' ', '\t', '\n', 'N', 'U', 'L', 'a', 'é', '😀'), maxLength: 12 }),
      fc.constantFrom('NULL', 'null', '', ' ', '"', '\\', '\\"', '{}', 'a,b'),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(fc.option(awkward, { nil: null }), { maxLength: 20 }), async (values) => {
        const [{ a }] = await testDb.db.query<{ a: (string | null)[] }>('SELECT $1::text[] AS a', [arrayLiteral(values)]);
        expect(a).toEqual(values);
      }),
      { numRuns: 300 },
    );
  });

  it('carry numbers, booleans and times for the casts of the outcome write', async () => {
    const [row] = await testDb.db.query<{ n: number[]; b: boolean[]; t: Date[] }>('SELECT $1::int[] AS n, $2::boolean[] AS b, $3::timestamptz[] AS t', [
      arrayLiteral([0, -7, 2_147_483_647, null]),
      arrayLiteral([true, false, null]),
      arrayLiteral(['2026-11-24T01:02:03.456Z', null]),
    ]);
    expect(row).toEqual({ n: [0, -7, 2_147_483_647, null], b: [true, false, null], t: [new Date('2026-11-24T01:02:03.456Z'), null] });
  });
});
