import { PGlite } from '@electric-sql/pglite';
import type { Db, OpenTransaction, Queryable } from './db.js';
import { withScopes } from './scope.js';

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

  /**
   * A transaction kept open until commit() or rollback(), for a scope (scope.ts): PGlite's own
   * transaction() holds the one connection while its callback runs, so the callback waits for the end.
   */
  function hold(): Promise<OpenTransaction> {
    return new Promise((opened, failed) => {
      let end!: (commit: boolean) => void;
      const ending = new Promise<boolean>((resolve) => (end = resolve));
      let began = false;
      const finished = pg.transaction(async (tx) => {
        began = true;
        opened({
          query: async <R>(sql: string, params?: unknown[]) => (await tx.query<R>(sql, params)).rows,
          commit: async () => {
            end(true);
            await finished;
          },
          rollback: async () => {
            end(false);
            await finished;
          },
        });
        if (!(await ending)) await tx.rollback();
      });
      finished.catch((error) => {
        if (!began) failed(error);
      });
    });
  }

  return withScopes({
    engine: 'pglite',
    query,
    async tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
      return pg.transaction(async (tx) =>
        fn({ query: async <R>(sql: string, params?: unknown[]) => (await tx.query<R>(sql, params)).rows }),
      );
    },
    async listen(channel, onNotify) {
      // Quoted, as PostgreSQL's listener does: PGlite puts the name as given in LISTEN and UNLISTEN,
      // and would fold it to lower case or refuse a `:` or `#` (the channels of a schema, channels.ts).
      const quoted = `"${channel}"`;
      await pg.listen(quoted, onNotify);
      return async () => pg.unlisten(quoted, onNotify);
    },
    async close() {
      await pg.close();
    },
  }, hold);
}
