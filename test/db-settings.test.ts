import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/db/db.js';
import { connectionSettings, openPostgres } from '../src/db/postgres.js';
import { keepStatistics, refreshStatistics } from '../src/db/statistics.js';
import { ManualClock } from '../src/lib/clock.js';
import { createContext } from '../src/server/runtime.js';
import { DeliveryWorker } from '../src/engine/delivery/worker.js';
import { startTestApp, testConfig, type TestApp } from './helpers/app.js';
import { POSTGRES_URL } from './helpers/db.js';
import { addEndpoint, createProduct, deliveriesOf } from './helpers/delivery.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

describe('connection settings', () => {
  const saved = process.env.PGOPTIONS;
  afterEach(() => {
    if (saved === undefined) delete process.env.PGOPTIONS;
    else process.env.PGOPTIONS = saved;
  });

  it('keeps the service\'s settings, then PGOPTIONS, the URL\'s own options and the schema, later ones winning', () => {
    process.env.PGOPTIONS = '-c work_mem=8MB';
    const url = new URL(`postgres://svc@db.example:5432/app?sslmode=require&options=${encodeURIComponent('-c statement_timeout=5s')}`);
    expect(connectionSettings(url, 's1', 5000)).toBe('-c jit=off -c TimeZone=UTC -c idle_in_transaction_session_timeout=60000 -c statement_timeout=5000 -c work_mem=8MB -c statement_timeout=5s -c search_path=s1');
    delete process.env.PGOPTIONS;
    expect(connectionSettings(new URL('postgres://svc@db.example/app'), undefined, 5000)).toBe('-c jit=off -c TimeZone=UTC -c idle_in_transaction_session_timeout=60000 -c statement_timeout=5000');
  });

  it('applies them on the server, with an operator\'s own setting outranking the service\'s', async () => {
    const url = `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent('-c statement_timeout=7s')}`;
    const db = await openPostgres({ url });
    try {
      const [row] = await db.query<{ seqscan: string; jit: string; timeout: string }>(
        "SELECT current_setting('enable_seqscan') AS seqscan, current_setting('jit') AS jit, current_setting('statement_timeout') AS timeout",
      );
      // The planner keeps every scan method: plans stay right through fresh statistics (db/statistics.ts).
      expect(row).toEqual({ seqscan: 'on', jit: 'off', timeout: '7s' });
    } finally {
      await db.close();
    }
    const overridden = await openPostgres({ url: `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent('-c jit=on')}` });
    try {
      expect(await overridden.query('SHOW jit')).toEqual([{ jit: 'on' }]);
    } finally {
      await overridden.close();
    }
  });
});

/**
 * A named statement's generic plan is cached per connection. Cached while the deliveries table was
 * new, the outcome write's plan was a sequential scan, kept as the table grew: every write read the
 * whole table until an ANALYZE. The statistics keeper (src/db/statistics.ts) analyses a table that
 * grew, which re-plans what was cached.
 */
describe('plans cached while a table is new', () => {
  const clock = new ManualClock();
  const masterKey = randomBytes(32);
  let t: TestApp;
  let receiver: Receiver;
  let single: Db;
  beforeAll(async () => {
    t = await startTestApp({ clock, masterKey, config: { allowPrivateTargets: true } });
    receiver = await startReceiver();
    // One connection for writes and transactions, so the worker's writes and the statistics flushes
    // (made in a transaction, flush()) share one backend.
    single = await openPostgres({ url: POSTGRES_URL, schema: t.testDb.schema, poolSize: 1 });
  });
  afterAll(async () => {
    await single?.close();
    await receiver?.close();
    await t?.close();
  });

  /** The writes' backend reports its statistics as its next statement ends (plain reads travel on another connection). */
  async function flush(): Promise<void> {
    await single.tx((q) => q.query('SELECT pg_stat_force_next_flush()'));
  }

  async function tuplesReadByScans(): Promise<number> {
    await flush();
    const [row] = await single.query<{ read: number }>(
      "SELECT coalesce(seq_tup_read, 0)::int AS read FROM pg_stat_user_tables WHERE relid = 'webhook_deliveries'::regclass",
    );
    return row.read;
  }

  it('keeps the outcome write on the primary key as the deliveries table grows', async () => {
    const ctx = createContext(testConfig({ allowPrivateTargets: true }), single, masterKey, clock);
    const worker = new DeliveryWorker(ctx, { onError: (error) => expect.fail(String(error)) });
    const { id: endpointId } = await addEndpoint(t, receiver.url);
    try {
      // Eight claims and outcome writes on the new table: from the sixth on, a generic plan is cached.
      for (let i = 0; i < 8; i++) {
        await createProduct(t, `Hat ${i}`);
        expect(await worker.runDue()).toBe(1);
      }
      await single.query(
        `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, attempt, created_at)
         SELECT 'whd_' || lpad(to_hex(g), 26, '0'), $1, $2, 'evt_old', 'product.created', 'success', 1, $3
           FROM generate_series(1, 20000) AS g`,
        [t.demo.workspaces[0].id, endpointId, clock.now()],
      );
      // The growth reaches the statistics at once: the flush forced here runs as this statement
      // ends (a backend otherwise reports within 1 to 10 s).
      await flush();

      // As `svc serve` and `svc worker` do every few seconds.
      // The table, or the time partition that holds its rows.
      expect((await refreshStatistics(single)).some((name) => name.startsWith('webhook_deliveries'))).toBe(true);
      expect(await refreshStatistics(single)).toEqual([]);

      const before = await tuplesReadByScans();
      await createProduct(t, 'Last hat');
      expect(await worker.runDue()).toBe(1);
      const read = (await tuplesReadByScans()) - before;
      // A scan of the table reads its 20,000 rows and more.
      expect(read).toBeLessThan(1000);
      expect((await deliveriesOf(t, endpointId)).filter((r) => r.event_id !== 'evt_old').every((r) => r.status === 'success')).toBe(true);
    } finally {
      await worker.stop();
      await ctx.rateLimits.close();
    }
  });
});

describe('the statistics refresh', () => {
  let t: TestApp;
  let single: Db;
  beforeAll(async () => {
    t = await startTestApp();
    single = await openPostgres({ url: POSTGRES_URL, schema: t.testDb.schema, poolSize: 1 });
  });
  afterAll(async () => {
    await single?.close();
    await t?.close();
  });

  async function changedSinceAnalyze(): Promise<number> {
    // The inserting backend reports its counts as its next statement ends.
    await single.tx((q) => q.query('SELECT pg_stat_force_next_flush()'));
    const [row] = await single.query<{ n: number }>("SELECT n_mod_since_analyze::int AS n FROM pg_stat_user_tables WHERE relid = 'products'::regclass");
    return row.n;
  }

  it('checks at once, or one interval later when the caller has just refreshed (fresh, as `svc serve` does before its warm-up)', async () => {
    await single.query(
      `INSERT INTO products (id, workspace_id, name, active, metadata, created_at, updated_at)
       SELECT 'prd_' || lpad(to_hex(g), 26, '0'), $1, 'Hat ' || g, true, '{}', now(), now() FROM generate_series(1, 1000) AS g`,
      [t.demo.workspaces[0].id],
    );
    expect(await changedSinceAnalyze()).toBeGreaterThanOrEqual(1000);
    const fail = (error: unknown) => expect.fail(String(error));
    await keepStatistics(single, fail, { intervalMs: 60_000, fresh: true }).stop();
    expect(await changedSinceAnalyze()).toBeGreaterThanOrEqual(1000);
    await keepStatistics(single, fail, { intervalMs: 60_000 }).stop();
    expect(await changedSinceAnalyze()).toBe(0);
  });
});

describe('identifier collation', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp()));
  afterAll(() => t.close());

  it('gives every column holding an id or a token hash the byte-wise "C" collation, so no id is compared across two', async () => {
    const columns = await t.ctx.db.query<{ name: string; collation: string | null }>(
      `SELECT table_name || '.' || column_name AS name, collation_name AS collation
         FROM information_schema.columns
        WHERE table_schema = current_schema() AND data_type = 'text' AND table_name <> 'schema_migrations'
          AND (column_name = 'id' OR column_name LIKE '%\\_id' OR column_name IN ('token_hash', 'replay_of'))`,
    );
    expect(columns.length).toBeGreaterThan(25);
    expect(columns.filter((c) => c.collation !== 'C')).toEqual([]);
  });
});
