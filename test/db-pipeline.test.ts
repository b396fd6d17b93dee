import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseUnavailableError } from '../src/db/db.js';
import { openPostgres } from '../src/db/postgres.js';
import { ENGINE, POSTGRES_URL, openTestDb, type TestDb } from './helpers/db.js';
import { TcpProxy } from './helpers/tcp-proxy.js';

/**
 * Single statements travel pipelined on a few connections (src/db/pipeline.ts), transactions on
 * node-pg: both must read and write every value the same way.
 */
describe.skipIf(ENGINE === 'pglite')('pipelined statements (PostgreSQL)', () => {
  let testDb: TestDb;
  beforeAll(async () => {
    testDb = await openTestDb();
  });
  afterAll(() => testDb.close());

  it('answers each of many concurrent statements with its own result, over at most 4 connections', async () => {
    const rows = await Promise.all(
      Array.from({ length: 300 }, (_, i) => testDb.db.query<{ n: number; pid: number }>('SELECT $1::int AS n, pg_backend_pid() AS pid', [i])),
    );
    expect(rows.map(([row]) => row.n)).toEqual(Array.from({ length: 300 }, (_, i) => i));
    expect(new Set(rows.map(([row]) => row.pid)).size).toBeLessThanOrEqual(4);
  });

  it('sends parameters and parses results exactly as a transaction on node-pg does', async () => {
    const sql = `SELECT $1::timestamptz AS at, $2::timestamptz[] AS ats, $3::text[] AS texts, $4::jsonb AS object, $5::jsonb AS given_text,
                        $6::bytea AS bytes, $7::boolean AS yes, $8::bigint AS big, $9::int8[] AS bigs, $10::text AS nothing, $11::text AS missing,
                        $12::numeric AS price, $13::date AS day, 2^53::int8 - 1 AS top, '{"a":[1,{"b":null}]}'::json AS plain_json,
                        ARRAY[true, NULL]::boolean[] AS flags, now() - now() AS none`;
    const params = [
      new Date('2026-11-25T10:00:00.123Z'),
      [new Date('2026-11-25T10:00:00.001Z'), null],
      ['a,b', '"q"', 'NULL', null, '', 'é😀', '{x}', 'back\\slash'],
      { k: 'v', n: [1, 2], nested: { deep: true } },
      '{"already":"text"}',
      Buffer.from([0, 1, 254, 255]),
      true,
      9_007_199_254_740_991,
      [1, null, 3],
      null,
      undefined,
      '12.50',
      '2026-11-25',
    ];
    const [pipelined] = await testDb.db.query(sql, params);
    const [viaPg] = await testDb.db.tx((q) => q.query(sql, params));
    expect(pipelined).toEqual(viaPg);
    expect(pipelined).toMatchObject({
      at: new Date('2026-11-25T10:00:00.123Z'),
      texts: ['a,b', '"q"', 'NULL', null, '', 'é😀', '{x}', 'back\\slash'],
      object: { k: 'v', n: [1, 2], nested: { deep: true } },
      given_text: { already: 'text' },
      bytes: Buffer.from([0, 1, 254, 255]),
      yes: true,
      big: 9_007_199_254_740_991,
      nothing: null,
      missing: null,
      price: '12.50',
      flags: [true, null],
    });
  });

  it("gives a server error's code and constraint as node-pg names them", async () => {
    await testDb.db.query('CREATE TABLE pipeline_unique (k text PRIMARY KEY)');
    await testDb.db.query('INSERT INTO pipeline_unique (k) VALUES ($1)', ['one']);
    const error = await testDb.db.query('INSERT INTO pipeline_unique (k) VALUES ($1)', ['one']).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: '23505', constraint: 'pipeline_unique_pkey', table: 'pipeline_unique', detail: 'Key (k)=(one) already exists.' });
  });

  describe('through a database that stops answering', () => {
    const cleanup: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const fn of cleanup.splice(0).reverse()) await fn();
    });

    it('fails a statement past the query time-out as unavailable, then answers on new connections once the database does', async () => {
      const proxy = new TcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
      await proxy.start();
      cleanup.push(async () => {
        proxy.release();
        await proxy.stop();
      });
      const url = new URL(POSTGRES_URL);
      url.host = `127.0.0.1:${proxy.port}`;
      const db = await openPostgres({ url: url.toString(), schema: testDb.schema!, timeouts: { connectMs: 1_000, statementMs: 1_000, queryMs: 1_500, keepAliveMs: 1_000 } });
      cleanup.push(() => db.close());
      const [{ before }] = await db.query<{ before: number }>('SELECT $1::int AS before', [1]);
      expect(before).toBe(1);

      proxy.hang();
      const stuck = await Promise.all([1, 2, 3].map((n) => db.query('SELECT $1::int AS n', [n]).catch((e: unknown) => e)));
      for (const error of stuck) expect(error).toBeInstanceOf(DatabaseUnavailableError);

      proxy.release();
      const [{ after }] = await db.query<{ after: number }>('SELECT $1::int AS after', [2]);
      expect(after).toBe(2);
    });
  });
});
