import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/db/db.js';
import { migrate } from '../src/db/migrate.js';
import { newId } from '../src/lib/ids.js';
import { schemaBeforePartitions } from './helpers/db.js';

/**
 * `svc migrate` beside a service still writing: the upgrade from the version before failure alerts
 * and partitions must neither deadlock with a write nor hold writes up while it builds an index.
 */
describe('migrations beside writes', () => {
  let db: Db;
  let schema: Awaited<ReturnType<typeof schemaBeforePartitions>>;

  beforeAll(async () => {
    schema = await schemaBeforePartitions('online', 4);
    db = schema.db;
  });
  afterAll(async () => {
    await schema?.drop();
  });

  const insert = (q: { query: Db['query'] }) =>
    q.query(
      `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, next_attempt_at, created_at)
       VALUES ($1, 'wsp_1', 'whe_1', 'evt_x', 'product.created', 'pending', now(), now())`,
      [newId('whd')],
    );

  it('lets a transaction writing deliveries go on while the upgrade waits for it, and both finish', async () => {
    // A service's transaction that has begun writing deliveries, and writes again once the upgrade waits for it.
    const writer = await db.begin();
    await writer.query('LOCK TABLE webhook_deliveries IN ROW EXCLUSIVE MODE');
    const upgrade = migrate(db).then(
      (applied) => ({ applied, error: null }),
      (error: Error) => ({ applied: [], error }),
    );
    // The upgrade comes to wait for it (the index build needs its writes to end).
    const [{ pid }] = await writer.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    let waited = false;
    for (let i = 0; i < 400 && !waited; i++) {
      const [{ n }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))', [pid]);
      waited = n > 0;
      if (!waited) await new Promise((r) => setTimeout(r, 25));
    }
    expect(waited).toBe(true);
    // Its next write takes a lock on the endpoints (the foreign key): one the upgrade must not hold now.
    await insert(writer);
    await writer.commit();
    const { applied, error } = await upgrade;
    expect(error).toBeNull();
    expect(applied[0]).toBe('025_endpoint_alerts.sql');
    // What the upgrade built is whole, and writes go on after it.
    const [index] = await db.query<{ valid: boolean }>(
      `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'webhook_deliveries_retrying' AND c.relnamespace = current_schema()::regnamespace`,
    );
    expect(index).toEqual({ valid: true });
    await insert(db);
    expect(await migrate(db)).toEqual([]);
  });
});
