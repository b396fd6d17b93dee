import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { bound, listPartitions, PARTITIONED } from '../src/db/partitions.js';
import { openPostgres } from '../src/db/postgres.js';
import { migrate } from '../src/db/migrate.js';
import { loadConfig } from '../src/lib/config.js';
import { newId } from '../src/lib/ids.js';
import { openContext } from '../src/server/runtime.js';
import { freshSchema } from './helpers/db.js';

/**
 * A process that starts after the partitions made ahead have run out (its installation stopped
 * for longer than they reach) makes them before it takes a request or a claim, so that nothing it
 * writes finds no partition to go to.
 */
describe('partitions at a start', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('are made before the context is handed out', async () => {
    const schema = await freshSchema('pstart');
    cleanup.push(() => schema.drop());
    // A database whose partitions end now: the history partition of a fresh schema, cut back.
    const setup = await openPostgres({ url: schema.url, schema: schema.schema });
    await migrate(setup);
    const now = Date.now();
    for (const { table, prefix } of PARTITIONED) {
      await setup.query(`ALTER TABLE ${table} DETACH PARTITION ${table}_history`);
      await setup.query(`ALTER TABLE ${table} ATTACH PARTITION ${table}_history FOR VALUES FROM (MINVALUE) TO ('${bound(prefix, now)}')`);
    }
    await setup.close();

    const config = loadConfig({ DATABASE_URL: schema.url, SVC_MASTER_KEY: randomBytes(32).toString('hex'), SVC_PARTITION_WIDTH: '1m', LOG_LEVEL: 'silent' });
    const ctx = await openContext(config, { quiet: true });
    cleanup.push(async () => {
      await ctx.rateLimits.close();
      await ctx.db.close();
    });
    for (const { table } of PARTITIONED) expect((await listPartitions(ctx.db, table)).at(-1)!.to).toBeGreaterThan(Date.now() + 60_000);
    await ctx.db.query(`INSERT INTO organizations (id, slug, name, created_at) VALUES ('org_1', 'o', 'O', now())`);
    await ctx.db.query(`INSERT INTO workspaces (id, organization_id, slug, name, created_at) VALUES ('wsp_1', 'org_1', 'w', 'W', now())`);
    await ctx.db.query(`INSERT INTO events (id, workspace_id, type, body, created_at) VALUES ($1, 'wsp_1', 'product.created', '{}', now())`, [newId('evt')]);
    expect(await ctx.db.query('SELECT id FROM events')).toHaveLength(1);
  });
});
