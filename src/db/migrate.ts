import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Db, Queryable } from './db.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

/**
 * Applies every `migrations/NNN_name.sql` not yet recorded, in order, each in its own transaction
 * (so a long step, such as validating a constraint under a light lock, is committed before the next
 * takes a heavy one). An advisory lock (one per schema) keeps two processes starting together from
 * applying the same file twice. They run without the statement time-out: a migration of a large
 * table may take long.
 *
 * A file whose first line is `-- no transaction` runs statement by statement outside a transaction
 * (CREATE INDEX CONCURRENTLY builds an index on a large table without holding its writes up); its
 * statements must be safe to run again, since a stop halfway leaves the file to be run whole again.
 */
export async function migrate(db: Db, options: { through?: string } = {}): Promise<string[]> {
  const applied: string[] = [];
  for (const file of migrationFiles()) {
    // Only the files up to a given one (an upgrade's starting point, in tests and benchmarks).
    if (options.through !== undefined && file > options.through) break;
    const text = readFileSync(MIGRATIONS_DIR + file, 'utf8');
    const done = text.startsWith('-- no transaction') ? await db.session((q) => applyOutside(q, file, text)) : await db.tx((q) => apply(q, file, text, 'pg_try_advisory_xact_lock'), { unbounded: true });
    if (done) applied.push(file);
  }
  return applied;
}

const LOCK_KEY = 4242;
const LOCK_RETRY_MS = 100;

/**
 * Runs one file's statements and records it, under the migrations' advisory lock; false when it was
 * applied already. The lock is tried, not waited for in a statement: CREATE INDEX CONCURRENTLY in
 * the process that holds it waits for every statement older than its own, and would wait for ours.
 */
async function apply(q: Queryable, file: string, text: string, lock: 'pg_try_advisory_xact_lock' | 'pg_try_advisory_lock'): Promise<boolean> {
  while (!(await q.query<{ locked: boolean }>(`SELECT ${lock}(${LOCK_KEY}, hashtext(current_schema())) AS locked`))[0].locked) await sleep(LOCK_RETRY_MS);
  await q.query('CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
  if ((await q.query('SELECT 1 FROM schema_migrations WHERE name = $1', [file])).length > 0) return false;
  for (const statement of splitStatements(text)) await q.query(statement);
  await q.query('INSERT INTO schema_migrations (name) VALUES ($1)', [file]);
  return true;
}

/** apply() on a connection outside a transaction: the lock is the session's, released at the end. */
async function applyOutside(q: Queryable, file: string, text: string): Promise<boolean> {
  try {
    return await apply(q, file, text, 'pg_try_advisory_lock');
  } finally {
    await q.query(`SELECT pg_advisory_unlock(${LOCK_KEY}, hashtext(current_schema()))`).catch(() => {});
  }
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
