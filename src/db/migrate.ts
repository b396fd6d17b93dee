import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Db, Queryable } from './db.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

/**
 * Applies every `migrations/NNN_name.sql` not yet recorded, in order, each in its own transaction
 * (so a long step, such as validating a constraint under a light lock, is committed before the next
 * takes a heavy one). An advisory lock keeps two processes starting together from applying the same
 * file twice. They run without the statement time-out: a migration of a large table may take long.
 */
export async function migrate(db: Db, options: { through?: string } = {}): Promise<string[]> {
  const applied: string[] = [];
  for (const file of migrationFiles()) {
    // Only the files up to a given one (an upgrade's starting point, in tests and benchmarks).
    if (options.through !== undefined && file > options.through) break;
    const done = await db.tx(async (q) => {
      await q.query('SELECT pg_advisory_xact_lock(4242)');
      await q.query('CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
      if ((await q.query('SELECT 1 FROM schema_migrations WHERE name = $1', [file])).length > 0) return false;
      for (const statement of splitStatements(readFileSync(MIGRATIONS_DIR + file, 'utf8'))) {
        await q.query(statement);
      }
      await q.query('INSERT INTO schema_migrations (name) VALUES ($1)', [file]);
      return true;
    }, { unbounded: true });
    if (done) applied.push(file);
  }
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

/**
 * Our migrations keep one statement per `;`-terminated line end; a `DO $$ ... $$` block is one
 * statement, whatever it holds.
 */
export function splitStatements(sql: string): string[] {
  const parts = sql.replace(/--.*$/gm, '').split('$$');
  const statements: string[] = [];
  let current = '';
  parts.forEach((part, i) => {
    if (i % 2 === 1) {
      current += `$$${part}$$`;
      return;
    }
    const pieces = part.split(/;\s*(?:\n|$)/);
    current += pieces[0];
    for (const piece of pieces.slice(1)) {
      statements.push(current);
      current = piece;
    }
  });
  statements.push(current);
  return statements.map((s) => s.trim()).filter(Boolean);
}
