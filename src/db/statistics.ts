import type { Db } from './db.js';

/** How often a process checks whether a table has grown past its planner statistics. */
export const STATISTICS_INTERVAL_MS = 5_000;

/** A table is analysed again once this many rows changed since its last ANALYZE... */
const MIN_CHANGES = 100;
/** ...and at least this share of its rows. */
const GROWTH = 0.2;

/**
 * One process at a time analyses a schema (any number of `svc serve` and `svc worker` run this);
 * services on other schemas of the same database take their own lock.
 */
const LOCK_KEY = 0x5354_4154; // 'STAT'

/**
 * Keeps the planner's statistics in step with tables that grow fast, which matters for one reason:
 * every parameterised statement is a named prepared statement (db/postgres.ts), and after a few runs
 * PostgreSQL caches its generic plan per connection. A plan made while a table was new and tiny
 * scans the table, since that is cheapest for one page; the plan stays cached as the table grows,
 * and every delivery outcome written by primary key would then read the whole deliveries table.
 * An ANALYZE invalidates the cached plans that use the table, so the next run is planned on the
 * table's real size and takes its index.
 *
 * PostgreSQL's autovacuum analyses too, but only after its naptime (a minute) and 10% growth.
 * This check is cheap: one read of pg_stat_user_tables,
 * and an ANALYZE (a sample of at most 30,000 rows per table) only for tables that grew by a fifth.
 *
 * Returns the tables analysed.
 */
export async function refreshStatistics(db: Db): Promise<string[]> {
  return db.tx(async (tx) => {
    const [{ locked }] = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1, hashtext(current_schema())) AS locked', [LOCK_KEY]);
    if (!locked) return [];
    const grown = await tx.query<{ name: string }>(
      `SELECT s.relname AS name
         FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
        WHERE s.schemaname = current_schema()
          AND s.n_mod_since_analyze >= greatest($1, c.reltuples * $2)
        ORDER BY s.relname`,
      [MIN_CHANGES, GROWTH],
    );
    for (const { name } of grown) await tx.query(`ANALYZE "${name.replace(/"/g, '""')}"`);
    return grown.map((t) => t.name);
  });
}

/**
 * Runs refreshStatistics every `intervalMs`, in `svc serve` and `svc worker`: first now, or, when the
 * caller has just refreshed them (`fresh`), one interval later.
 */
export function keepStatistics(
  db: Db,
  onError: (error: unknown) => void,
  { intervalMs = STATISTICS_INTERVAL_MS, fresh = false }: { intervalMs?: number; fresh?: boolean } = {},
): { stop(): Promise<void> } {
  let running: Promise<unknown> | null = null;
  const tick = () => {
    running ??= refreshStatistics(db)
      .catch(onError)
      .finally(() => (running = null));
  };
  if (!fresh) tick();
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
