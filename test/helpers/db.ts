import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Db } from '../../src/db/db.js';
import { migrate } from '../../src/db/migrate.js';
import { openPglite } from '../../src/db/pglite.js';
import { openPostgres } from '../../src/db/postgres.js';

export const ENGINE = (process.env.TEST_ENGINE ?? 'pglite') as 'pglite' | 'postgres';
export const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface TestDb {
  db: Db;
  /** The PostgreSQL schema of this database (null on PGlite), for opening more connections to it. */
  schema: string | null;
  close(): Promise<void>;
}

/** A fresh, migrated database: in-memory PGlite, or a new schema on the PostgreSQL server. */
export async function openTestDb(): Promise<TestDb> {
  if (ENGINE === 'pglite') {
    const db = await openPglite(null);
    await migrate(db);
    return { db, schema: null, close: () => db.close() };
  }
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  const db = await openPostgres({ url: POSTGRES_URL, schema, poolSize: 5 });
  await migrate(db);
  return {
    db,
    schema,
    close: async () => {
      await db.close();
      const cleanup = new pg.Client({ connectionString: POSTGRES_URL });
      await cleanup.connect();
      await cleanup.query(`DROP SCHEMA ${schema} CASCADE`);
      await cleanup.end();
    },
  };
}

/**
 * A fresh schema on the PostgreSQL server, for processes started apart from the test (`svc ...`):
 * its URL puts the schema on their search path; drop() removes it with everything in it.
 */
export async function freshSchema(prefix: string): Promise<{ schema: string; url: string; drop(): Promise<void> }> {
  const schema = `${prefix}_${randomBytes(5).toString('hex')}`;
  const run = async (sql: string) => {
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await run(`CREATE SCHEMA ${schema}`);
  const separator = POSTGRES_URL.includes('?') ? '&' : '?';
  return { schema, url: `${POSTGRES_URL}${separator}options=-c%20search_path%3D${schema}`, drop: () => run(`DROP SCHEMA IF EXISTS ${schema} CASCADE`) };
}
