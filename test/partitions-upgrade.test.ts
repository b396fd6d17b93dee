import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/db/db.js';
import { migrate, migrationFiles } from '../src/db/migrate.js';
import { ensurePartitions, listPartitions, PARTITIONED } from '../src/db/partitions.js';
import { idTimePrefix } from '../src/lib/ids.js';
import { schemaBeforePartitions } from './helpers/db.js';

/** `svc migrate` on a database of the version before partitions: every row kept where it is, in the first partition. */
describe('upgrade to partitions', () => {
  let db: Db;
  let schema: Awaited<ReturnType<typeof schemaBeforePartitions>>;
  const at = new Date(Date.now() - 3 * 86_400_000);
  const id = (prefix: 'whd' | 'evt', n: number) => `${idTimePrefix(prefix, at)}${String(n).padStart(16, '0')}`;

  beforeAll(async () => {
    schema = await schemaBeforePartitions('up', 3);
    db = schema.db;
    await db.query(
      `INSERT INTO events (id, workspace_id, type, body, created_at)
       SELECT $1 || lpad(g::text, 16, '0'), 'wsp_1', 'product.created', '{}', $2 FROM generate_series(1, 50) g`,
      [idTimePrefix('evt', at), at],
    );
    await db.query(
      `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, next_attempt_at, created_at)
       SELECT $1 || lpad(g::text, 16, '0'), 'wsp_1', 'whe_1', $2 || lpad(g::text, 16, '0'), 'product.created',
              CASE WHEN g = 1 THEN 'pending' ELSE 'success' END, CASE WHEN g = 1 THEN $3::timestamptz END, $3
         FROM generate_series(1, 50) g`,
      [idTimePrefix('whd', at), idTimePrefix('evt', at), at],
    );
    await db.query(
      `INSERT INTO webhook_delivery_attempts (delivery_id, attempt, workspace_id, endpoint_id, started_at, ok)
       SELECT id, 1, workspace_id, endpoint_id, created_at, true FROM webhook_deliveries`,
    );
  });
  afterAll(async () => {
    await schema?.drop();
  });

  it('turns each table into a partitioned one whose first partition is the table as it was', async () => {
    const applied = await migrate(db);
    expect(applied).toEqual(migrationFiles().filter((f) => f > '024_~'));
    for (const { table } of PARTITIONED) {
      const [history] = await listPartitions(db, table);
      expect(history).toMatchObject({ name: `${table}_history`, from: null });
      expect(history.to).toBeGreaterThan(Date.now());
      const [{ n }] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ONLY ${table}_history`);
      expect(n).toBe(50);
      // The bound that let ATTACH skip its scan is gone, and the indexes are the parent's own partitions.
      const checks = await db.query(`SELECT conname FROM pg_constraint WHERE conrelid = $1::regclass AND conname LIKE '%history_bound'`, [`${table}_history`]);
      expect(checks).toEqual([]);
      const loose = await db.query(
        `SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
          WHERE i.indrelid = $1::regclass AND NOT EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = i.indexrelid)`,
        [`${table}_history`],
      );
      expect(loose).toEqual([]);
    }
    // Rows read and written as before; new ids go to new partitions once made.
    expect(await db.query(`SELECT id, status FROM webhook_deliveries WHERE status = 'pending'`)).toEqual([{ id: id('whd', 1), status: 'pending' }]);
    const later = new Date(Date.now() + 3 * 86_400_000);
    expect((await ensurePartitions(db, later, 86_400_000)).length).toBeGreaterThan(0);
    await db.query(
      `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, next_attempt_at, created_at)
       VALUES ($1, 'wsp_1', 'whe_1', $2, 'product.created', 'pending', $3, $3)`,
      [`${idTimePrefix('whd', later)}0000000000000001`, id('evt', 1), later],
    );
    const [{ partition }] = await db.query<{ partition: string }>(`SELECT tableoid::regclass::text AS partition FROM webhook_deliveries WHERE created_at = $1`, [later]);
    expect(partition).toMatch(/^webhook_deliveries_p\d{12}$/);
    // A second run finds nothing to do.
    expect(await migrate(db)).toEqual([]);
  });
});
