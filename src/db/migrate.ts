import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Db, Queryable } from './db.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

/**
 * Applies every `migrations/NNN_name.sql` not yet recorded, in order, each in its own transaction.
 * An advisory lock keeps two processes starting together from applying the same file twice. They
 * run without the statement time-out: a migration of a large table may take long.
 */
export async function migrate(db: Db): Promise<string[]> {
  const files = migrationFiles();
  const applied: string[] = [];
  await db.tx(async (q) => {
    await q.query('SELECT pg_advisory_xact_lock(4242)');
    await q.query('CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
    const done = new Set((await q.query<{ name: string }>('SELECT name FROM schema_migrations')).map((r) => r.name));
    for (const file of files) {
      if (done.has(file)) continue;
      for (const statement of splitStatements(readFileSync(MIGRATIONS_DIR + file, 'utf8'))) {
        await q.query(statement);
      }
      await q.query('INSERT INTO schema_migrations (name) VALUES ($1)', [file]);
      applied.push(file);
    }
  }, { unbounded: true });
  return applied;
}

let files: string[] | null = null;

/** The names of every migration this build carries, in order (read once). */
export function migrationFiles(): string[] {
  files ??= readdirSync(MIGRATIONS_DIR).filter((f) => /^\d+_.+\.sql$/.test(f)).sort();
  return files;
}

/** Names of this build's migrations not yet applied to the database (it throws when unreachable). */
export async function pendingMigrations(q: Queryable): Promise<string[]> {
  const rows = await q.query<{ name: string }>('SELECT name FROM schema_migrations');
  const done = new Set(rows.map((r) => r.name));
  return migrationFiles().filter((f) => !done.has(f));
}

/** Our migrations keep one statement per `;`-terminated block and no functions with bodies. */
function splitStatements(sql: string): string[] {
  return sql
    .replace(/--.*$/gm, '')
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.trim())
    .filter(Boolean);
}
