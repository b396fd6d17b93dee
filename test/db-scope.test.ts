import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/db/db.js';
import { openPostgres } from '../src/db/postgres.js';
import { openTestDb, POSTGRES_URL, type TestDb } from './helpers/db.js';

/**
 * Request transactions (src/db/scope.ts): inside a scope's run(), every query and tx() of its Db
 * joins the scope's transaction, and nothing else does.
 */
describe('transaction scopes', () => {
  let testDb: TestDb;
  let db: Db;
  beforeAll(async () => {
    testDb = await openTestDb();
    db = testDb.db;
    await db.query('CREATE TABLE scoped (id int PRIMARY KEY, note text)');
  });
  afterAll(() => testDb.close());

  const ids = async () => (await db.query<{ id: number }>('SELECT id FROM scoped ORDER BY id')).map((r) => r.id);
  const clear = () => db.query('DELETE FROM scoped');

  it('runs every query and tx of the Db made inside run() in its transaction: a rollback undoes them all', async () => {
    await clear();
    const scope = await db.openScope();
    await scope.run(async () => {
      expect(db.inScope()).toBe(true);
      await db.query('INSERT INTO scoped (id) VALUES (1)');
      await db.tx(async (q) => q.query('INSERT INTO scoped (id) VALUES (2)'));
      // Later turns of the request's own async work still join.
      await new Promise((resolve) => setImmediate(resolve));
      await db.query('INSERT INTO scoped (id) VALUES (3)');
      expect((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM scoped'))[0].n).toBe(3);
    });
    await scope.rollback();
    expect(db.inScope()).toBe(false);
    expect(await ids()).toEqual([]);
  });

  it('commits them together; a failed tx() inside is a savepoint that undoes only its own statements', async () => {
    await clear();
    const scope = await db.openScope();
    await scope.run(async () => {
      await db.query('INSERT INTO scoped (id) VALUES (1)');
      await expect(
        db.tx(async (q) => {
          await q.query('INSERT INTO scoped (id) VALUES (2)');
          await q.query('INSERT INTO scoped (id) VALUES (1)');
        }),
      ).rejects.toThrow();
      // The transaction is still usable after the failure (PostgreSQL would refuse every statement of an aborted one).
      await db.query('INSERT INTO scoped (id) VALUES (3)');
    });
    await scope.commit();
    expect(await ids()).toEqual([1, 3]);
  });

  it('runs afterCommit work at the commit, or its rollback work instead; outside a scope, at once', async () => {
    const seen: string[] = [];
    db.afterCommit(() => seen.push('unscoped'));
    expect(seen).toEqual(['unscoped']);

    for (const end of ['commit', 'rollback'] as const) {
      const scope = await db.openScope();
      scope.run(() => db.afterCommit(() => seen.push(`${end}: committed`), () => seen.push(`${end}: rolled back`)));
      expect(seen).toHaveLength(end === 'commit' ? 1 : 2);
      await scope[end]();
    }
    expect(seen).toEqual(['unscoped', 'commit: committed', 'rollback: rolled back']);
  });

  it('lets work started after the end, and work outside run(), go to the database itself', async () => {
    await clear();
    const scope = await db.openScope();
    let later: Promise<unknown> = Promise.resolve();
    await scope.run(async () => {
      await db.query('INSERT INTO scoped (id) VALUES (1)');
      // Work the request leaves behind, running once its transaction has ended.
      later = new Promise((resolve) => setTimeout(resolve, 50)).then(() => db.query('INSERT INTO scoped (id) VALUES (2)'));
    });
    await scope.rollback();
    await later;
    expect(await ids()).toEqual([2]);
  });

  it('is joined by statements of its own Db only', async () => {
    await clear();
    // Another Db in the same process: a second pool on the same schema.
    const other = await openPostgres({ url: POSTGRES_URL, schema: testDb.schema, poolSize: 1 });
    try {
      const scope = await db.openScope();
      await scope.run(async () => {
        expect(other.inScope()).toBe(false);
        await other.query('INSERT INTO scoped (id) VALUES (7)');
        await db.query('INSERT INTO scoped (id) VALUES (1)');
      });
      await scope.rollback();
      expect(await ids()).toEqual([7]);
      expect(await other.query('SELECT id FROM scoped')).toEqual([{ id: 7 }]);
    } finally {
      await other.close();
    }
  });

  it('keeps its changes from others until it commits', async () => {
    await clear();
    const scope = await db.openScope();
    await scope.run(() => db.query('INSERT INTO scoped (id) VALUES (1)'));
    expect(await ids()).toEqual([]);
    await scope.commit();
    expect(await ids()).toEqual([1]);
  });
});
