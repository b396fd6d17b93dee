import { PGlite } from '@electric-sql/pglite';
import type { Db, Queryable } from './db.js';

/**
 * The embedded engine: real PostgreSQL compiled to WASM, in-process, one connection. `dataDir`
 * null keeps it in memory (tests). Queries are serialised by PGlite itself.
 */
export async function openPglite(dataDir: string | null): Promise<Db> {
  const pg = dataDir ? new PGlite(dataDir) : new PGlite();
  await pg.waitReady;
  await pg.exec("SET TIME ZONE 'UTC'");

  async function query<T>(sql: string, params?: unknown[]): Promise<T[]> {
    const result = await pg.query<T>(sql, params);
    return result.rows;
  }

  return {
    engine: 'pglite',
    query,
    async tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
      return pg.transaction(async (tx) =>
        fn({ query: async <R>(sql: string, params?: unknown[]) => (await tx.query<R>(sql, params)).rows }),
      );
    },
    async listen(channel, onNotify) {
      const unsubscribe = await pg.listen(channel, onNotify);
      return async () => unsubscribe();
    },
    async close() {
      await pg.close();
    },
  };
}
