import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { inject } from 'vitest';
import type { Db } from '../../src/db/db.js';
import { migrate } from '../../src/db/migrate.js';
import { openPostgres } from '../../src/db/postgres.js';
import { TcpProxy } from './tcp-proxy.js';

/** The server every test uses: TEST_DATABASE_URL, or the embedded one the run started (server.ts beside this file). */
export const POSTGRES_URL = inject('databaseUrl');

export interface TestDb {
  db: Db;
  /** The schema of this database, for opening more connections to it. */
  schema: string;
  close(): Promise<void>;
}

/** Runs statements as the server's user, on a connection of their own (schemas, backends to end, ...). */
export async function asAdmin<T>(fn: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = postgres(POSTGRES_URL, { max: 1, onnotice: () => {}, fetch_types: false });
  try {
    return await fn(sql);
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** A fresh, migrated database: a new schema on the test server. */
export async function openTestDb(): Promise<TestDb> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  await asAdmin((sql) => sql.unsafe(`CREATE SCHEMA ${schema}`));
  const db = await openPostgres({ url: POSTGRES_URL, schema, poolSize: 5 });
  await migrate(db);
  return {
    db,
    schema,
    close: async () => {
      await db.close();
      await asAdmin((sql) => sql.unsafe(`DROP SCHEMA ${schema} CASCADE`));
    },
  };
}

/**
 * A fresh schema on the test server, for processes started apart from the test (`svc ...`): its
 * URL puts the schema on their search path; drop() removes it with everything in it.
 */
export async function freshSchema(prefix: string): Promise<{ schema: string; url: string; drop(): Promise<void> }> {
  const schema = `${prefix}_${randomBytes(5).toString('hex')}`;
  await asAdmin((sql) => sql.unsafe(`CREATE SCHEMA ${schema}`));
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return { schema, url: url.toString(), drop: () => asAdmin((sql) => sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)).then(() => {}) };
}

/**
 * A TCP proxy of the test's own in front of the test server (to cut, blackhole or reset it), and
 * the server's URL through it, with `schema` on its search path when given. The caller stops it.
 */
export async function proxiedDatabase(schema?: string): Promise<{ proxy: TcpProxy; url: string }> {
  const proxy = new TcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
  await proxy.start();
  const url = new URL(POSTGRES_URL);
  url.host = `127.0.0.1:${proxy.port}`;
  if (schema) url.searchParams.set('options', `-c search_path=${schema}`);
  return { proxy, url: url.toString() };
}

/** The last migration before the failure alerts and the time partitions: where the upgrade tests start. */
export const BEFORE_PARTITIONS = '024_deliveries_workspace_through_endpoint.sql';

/**
 * A fresh schema at the version before partitions (BEFORE_PARTITIONS), with one organization,
 * workspace and webhook endpoint (`org_1`, `wsp_1`, `whe_1`) for rows to belong to.
 */
export async function schemaBeforePartitions(prefix: string, poolSize: number): Promise<{ db: Db; drop(): Promise<void> }> {
  const schema = await freshSchema(prefix);
  const db = await openPostgres({ url: POSTGRES_URL, schema: schema.schema, poolSize });
  await migrate(db, { through: BEFORE_PARTITIONS });
  await db.query(`INSERT INTO organizations (id, slug, name, created_at) VALUES ('org_1', 'o', 'O', now())`);
  await db.query(`INSERT INTO workspaces (id, organization_id, slug, name, created_at) VALUES ('wsp_1', 'org_1', 'w', 'W', now())`);
  await db.query(
    `INSERT INTO webhook_endpoints (id, workspace_id, url, subscribed_events, active, secret_enc, created_at, updated_at)
     VALUES ('whe_1', 'wsp_1', 'https://example.com', '{*}', true, 'x', now(), now())`,
  );
  return {
    db,
    drop: async () => {
      await db.close();
      await schema.drop();
    },
  };
}
