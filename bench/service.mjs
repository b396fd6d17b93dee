// Starts the service under test against a benchmark database, seeded with a demo set.
import { randomBytes } from 'node:crypto';
import { createDemo } from '../dist/cli/demo.js';
import { migrate } from '../dist/db/migrate.js';
import { openPostgres } from '../dist/db/postgres.js';
import { NODE_FLAGS } from '../scripts/node-flags.mjs';
import { freePort, startProcess } from './lib.mjs';

export const MASTER_KEY = randomBytes(32).toString('hex');

/** Opens the benchmark database in this process (to seed and to count), migrated, with a demo set. */
export async function openSeeded(target) {
  const db = await openPostgres({ url: target.baseUrl, schema: target.schema });
  await migrate(db);
  const demo = await createDemo(db, 'http://127.0.0.1', new Date());
  return { db, demo, workspaceId: demo.workspaces[0].id, apiKey: demo.workspaces[0].apiKey };
}

/**
 * `svc serve` (API and, unless SVC_WORKERS=0, workers) as a child process, with the flags `npm start`
 * and the `svc` bin give Node.js; resolves when it listens.
 */
export async function startService(target, env = {}) {
  const port = await freePort();
  const base = {
    PORT: String(port),
    LOG_LEVEL: 'warn',
    SVC_MASTER_KEY: MASTER_KEY,
    SVC_RATE_LIMIT_API_KEY: '1000000000',
    SVC_RATE_LIMIT_PAT: '1000000000',
    SVC_ALLOW_PRIVATE_TARGETS: '1',
  };
  // BENCH_PROFILE_DIR=dir writes a V8 CPU profile of the service there (open it in Chrome DevTools).
  const extra = process.env.BENCH_NODE_EXTRA ? process.env.BENCH_NODE_EXTRA.split(' ').filter(Boolean) : [];
  const profile = process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [];
  const proc = await startProcess([...NODE_FLAGS, ...extra, ...profile, 'dist/cli/main.js', 'serve'], { ...base, DATABASE_URL: target.url, ...env }, 'is listening on');
  return { ...proc, url: `http://127.0.0.1:${port}` };
}

/** Products in bulk, one statement, spaced a millisecond apart like real traffic. */
export async function seedProducts(db, workspaceId, count) {
  await db.query(
    `INSERT INTO products (id, workspace_id, name, description, price_amount, price_currency, active, metadata, created_at, updated_at)
     SELECT 'prd_' || lpad(to_hex(g), 26, '0'), $1, 'Product ' || g, 'A product for the benchmark', 1000 + g, 'USD', true,
            '{"sku":"bench"}'::jsonb, now() - make_interval(secs => ($2 - g) / 1000.0), now()
       FROM generate_series(1, $2) AS g`,
    [workspaceId, count],
  );
}

/**
 * Writes dirty pages out now (CHECKPOINT), so a checkpoint brought on by the seeding or by an earlier
 * scenario does not fall inside a measurement.
 */
export async function settle(db) {
  await db.query('CHECKPOINT').catch(() => {});
}
