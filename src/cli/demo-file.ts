import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DemoSet } from './demo.js';
import type { Queryable } from '../db/db.js';

/** Where `svc serve --demo` keeps the demo set it seeded (mode 0600, beside the master key). */
export const demoFile = (dataDir: string): string => join(dataDir, 'demo.json');

/** The demo set of a data folder, or null when none was seeded there. */
export function readDemo(dataDir: string): DemoSet | null {
  const file = demoFile(dataDir);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as DemoSet) : null;
}

export const demoOwner = (demo: DemoSet) => demo.users.find((u) => u.role === 'owner')!;

/**
 * Whom a sign-in link is for when no user is named: the demo owner of the data folder, else the
 * only organization owner there is (`dataDir` null: a database of its own, no demo file). Null when there are several (or none): the caller must choose.
 */
export async function defaultOwner(q: Queryable, dataDir: string | null): Promise<string | null> {
  const demo = dataDir === null ? null : readDemo(dataDir);
  if (demo) return demoOwner(demo).email;
  const rows = await q.query<{ email: string }>(
    `SELECT DISTINCT u.email FROM users u JOIN organization_members m ON m.user_id = u.id WHERE m.role = 'owner' LIMIT 2`,
  );
  return rows.length === 1 ? rows[0].email : null;
}
