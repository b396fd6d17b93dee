import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseUnavailableError } from '../src/db/db.js';
import { onUnhandledRejection } from '../src/db/driver.js';
import { READ_CONNECTIONS, isPlainRead, openPostgres } from '../src/db/postgres.js';
import { POSTGRES_URL, openTestDb, type TestDb } from './helpers/db.js';
import { TcpProxy } from './helpers/tcp-proxy.js';

/**
 * Plain reads travel pipelined on a few connections, writes and transactions one statement per
 * connection (src/db/postgres.ts): both must read and write every value the same way, and a write
 * waiting for a lock must not hold up the reads.
 */
/** `fn`'s result once the database answers again: while it is known down, statements fail at once. */
async function answered<T>(fn: () => Promise<T>, ms = 8_000): Promise<T> {
  const deadline = performance.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (error) {
      if (!(error instanceof DatabaseUnavailableError) || performance.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

describe('read and write connections', () => {
  let testDb: TestDb;
  beforeAll(async () => {
    testDb = await openTestDb();
  });
  afterAll(() => testDb.close());

  it('answers each of many concurrent reads with its own result, over the read connections', async () => {
    const rows = await Promise.all(
      Array.from({ length: 300 }, (_, i) => testDb.db.query<{ n: number; pid: number }>('SELECT $1::int AS n, pg_backend_pid() AS pid', [i])),
    );
    expect(rows.map(([row]) => row.n)).toEqual(Array.from({ length: 300 }, (_, i) => i));
    expect(new Set(rows.map(([row]) => row.pid)).size).toBeLessThanOrEqual(READ_CONNECTIONS);
  });

  it('sends parameters and parses results the same way on both', async () => {
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
    const [inTransaction] = await testDb.db.tx((q) => q.query(sql, params));
    expect(pipelined).toEqual(inTransaction);
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

  it("gives a server error's code, and a write's constraint, under the usual names", async () => {
    expect(await testDb.db.query('SELECT 1 / $1::int AS x', [0]).catch((e: unknown) => e)).toMatchObject({ code: '22012' });
    await testDb.db.query('CREATE TABLE pipeline_unique (k text PRIMARY KEY)');
    await testDb.db.query('INSERT INTO pipeline_unique (k) VALUES ($1)', ['one']);
    const error = await testDb.db.query('INSERT INTO pipeline_unique (k) VALUES ($1)', ['one']).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: '23505', constraint: 'pipeline_unique_pkey', table: 'pipeline_unique', detail: 'Key (k)=(one) already exists.' });
  });

  it('tells plain reads from statements that write or lock', () => {
    for (const sql of ['SELECT 1', '  select id, updated_at FROM products', "WITH x AS (SELECT 1) SELECT * FROM x WHERE t = 'product.updated'", 'SELECT pg_try_advisory_xact_lock(1)']) {
      expect(isPlainRead(sql), sql).toBe(true);
    }
    for (const sql of [
      'UPDATE products SET name = $1',
      'WITH gone AS (DELETE FROM t RETURNING 1) SELECT count(*) FROM gone',
      'SELECT id FROM webhook_endpoints WHERE id = $1 FOR UPDATE',
      'SELECT id FROM t FOR NO KEY UPDATE SKIP LOCKED',
      'SELECT id FROM t FOR SHARE',
      'SELECT pg_advisory_xact_lock(4242)',
      'INSERT INTO t VALUES (1)',
      'ANALYZE t',
    ]) {
      expect(isPlainRead(sql), sql).toBe(false);
    }
  });

  it('answers reads while a write waits for a row lock', async () => {
    await testDb.db.query('CREATE TABLE pipeline_locked (k text PRIMARY KEY, v int)');
    await testDb.db.query("INSERT INTO pipeline_locked (k, v) VALUES ('a', 1)");
    const holder = await testDb.db.begin();
    await holder.query("SELECT k FROM pipeline_locked WHERE k = 'a' FOR UPDATE");
    let written = false;
    const write = testDb.db.query("UPDATE pipeline_locked SET v = 2 WHERE k = 'a'").then(() => (written = true));
    // The write now waits for the lock; reads, many of them, are answered meanwhile.
    const reads = await Promise.all(Array.from({ length: 20 }, () => testDb.db.query<{ v: number }>('SELECT v FROM pipeline_locked WHERE k = $1', ['a'])));
    expect(reads.map(([row]) => row.v)).toEqual(Array(20).fill(1));
    expect(written).toBe(false);
    await holder.commit();
    await write;
    const [{ v }] = await testDb.db.query<{ v: number }>('SELECT v FROM pipeline_locked WHERE k = $1', ['a']);
    expect(v).toBe(2);
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
      const db = await openPostgres({ url: url.toString(), schema: testDb.schema, timeouts: { connectMs: 1_000, statementMs: 1_000, queryMs: 1_500, keepAliveMs: 1_000 } });
      cleanup.push(() => db.close());
      const [{ before }] = await db.query<{ before: number }>('SELECT $1::int AS before', [1]);
      expect(before).toBe(1);

      proxy.hang();
      const stuck = await Promise.all([1, 2, 3].map((n) => db.query('SELECT $1::int AS n', [n]).catch((e: unknown) => e)));
      for (const error of stuck) expect(error).toBeInstanceOf(DatabaseUnavailableError);

      proxy.release();
      // Found down, the database is tried again after a short wait (db/breaker.ts).
      const [{ after }] = await answered(() => db.query<{ after: number }>('SELECT $1::int AS after', [2]));
      expect(after).toBe(2);
    });

    it('keeps a write connection the server refused a statement on, and replaces one whose statement timed out', async () => {
      // One connection for writes; the advisory lock makes each statement a write.
      // The time-out leaves room for a busy machine; the abandoned statement sleeps well past it.
      const db = await openPostgres({ url: POSTGRES_URL, schema: testDb.schema, poolSize: 1, timeouts: { statementMs: 20_000, queryMs: 1_000 } });
      cleanup.push(() => db.close());
      const pid = async () => (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid FROM pg_advisory_xact_lock($1)', [1]))[0].pid;
      const first = await answered(pid);

      await expect(answered(() => db.query('SELECT 1 / $2::int AS x FROM pg_advisory_xact_lock($1)', [1, 0]))).rejects.toMatchObject({ code: '22012' });
      expect(await pid()).toBe(first);

      const started = performance.now();
      // A lock of its own: the abandoned statement goes on sleeping on the server, holding it.
      const late = await db.query('SELECT pg_sleep(6) FROM pg_advisory_xact_lock($1)', [2]).catch((e: unknown) => e);
      expect(late).toBeInstanceOf(DatabaseUnavailableError);
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(await answered(pid)).not.toBe(first);

      // The same holds inside a transaction: a timed-out statement fails it as unavailable.
      const tx = await answered(() => db.begin());
      await expect(tx.query('SELECT pg_sleep(6)')).rejects.toBeInstanceOf(DatabaseUnavailableError);
      await tx.rollback().catch(() => {});
    }, 30_000);

    it('survives a connection lost while postgres.js looks up its array types: that rejection, which it leaves unhandled, is ignored', async () => {
      const proxy = new TcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
      await proxy.start();
      cleanup.push(() => proxy.stop());
      const unhandled: unknown[] = [];
      const collect = (reason: unknown) => unhandled.push(reason);
      process.on('unhandledRejection', collect);
      cleanup.push(async () => void process.off('unhandledRejection', collect));
      const url = new URL(POSTGRES_URL);
      url.host = `127.0.0.1:${proxy.port}`;
      const db = await openPostgres({ url: url.toString(), schema: testDb.schema, timeouts: { connectMs: 1_000, statementMs: 1_000, queryMs: 1_500, keepAliveMs: 1_000 } });
      cleanup.push(() => db.close());

      // The first connection's type look-up is cut, and the database is gone for a moment.
      const cut = proxy.cutAt('pg_catalog.pg_type', false);
      const first = db.query('SELECT $1::int AS n', [1]).catch((error: unknown) => error);
      await cut;
      expect(await first).toBeInstanceOf(DatabaseUnavailableError);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unhandled.length).toBeGreaterThan(0);
      // What reached the process is that look-up's failure, which the service ignores; anything else it throws.
      for (const reason of unhandled) expect(() => onUnhandledRejection(reason)).not.toThrow();
      expect(() => onUnhandledRejection(new Error('a bug of ours'))).toThrow('a bug of ours');

      await proxy.start();
      const [{ n }] = await answered(() => db.query<{ n: number }>('SELECT $1::int AS n', [2]));
      expect(n).toBe(2);
    });
  });
});
