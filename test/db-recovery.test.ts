import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../src/server/app.js';
import { openPostgres } from '../src/db/postgres.js';
import { loggerOptions } from '../src/http/logger.js';
import { createContext } from '../src/server/runtime.js';
import { startTestApp, testConfig } from './helpers/app.js';
import { POSTGRES_URL } from './helpers/db.js';
import { eventually } from './helpers/delivery.js';
import { LogCapture } from './helpers/log.js';
import { TcpProxy } from './helpers/tcp-proxy.js';

const TIMEOUTS = { connectMs: 1_000, statementMs: 1_000, queryMs: 1_500, keepAliveMs: 1_000 };
/** Long enough for the waits between probes to have grown as far as they go. */
const OUTAGE_MS = 4_000;
/** The first request after the database is back goes through within this (250 ms on an idle machine). */
const BACK_MS = 1_000;

/**
 * A database that refuses connections for a few seconds and comes back, through a TCP proxy in
 * front of the shared PostgreSQL: the service finds it again at once, and logs the outage in two
 * lines (down, and up with how long and how many were refused), not a line per refused request.
 */
describe('a database back from an outage', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('is used again from the first request after it is back, and the outage is logged once, with a counter', async () => {
    const masterKey = randomBytes(32);
    const t = await startTestApp({ masterKey });
    cleanup.push(() => t.close());
    const proxy = new TcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
    await proxy.start();
    cleanup.push(() => proxy.stop());
    const url = new URL(POSTGRES_URL);
    url.host = `127.0.0.1:${proxy.port}`;
    const db = await openPostgres({ url: url.toString(), schema: t.testDb.schema, poolSize: 4, timeouts: TIMEOUTS });
    const ctx = createContext(testConfig({ rateLimitApiKey: 1_000_000 }), db, masterKey);
    const log = new LogCapture();
    const app = await buildApp(ctx, { logger: loggerOptions('info', log) });
    cleanup.push(async () => {
      await app.close();
      await ctx.rateLimits.close();
      await db.close();
    });
    const headers = { authorization: `Bearer ${t.demo.workspaces[0].apiKey}` };
    const read = async () => (await app.inject({ method: 'GET', url: '/v1/products', headers })).statusCode;
    await eventually(async () => (await read()) === 200, 10_000);
    // What a slow start on a busy machine may have logged is not this outage's.
    const before = log.records.length;

    await proxy.stop();
    const seen: { at: number; status: number }[] = [];
    let back = Infinity;
    const client = async () => {
      while (performance.now() < back + 5_000) {
        const status = await read();
        seen.push({ at: performance.now(), status });
        if (status === 200 && performance.now() > back) return;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const running = Promise.all([client(), client()]);
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    await proxy.start();
    back = performance.now();
    await running;

    const after = seen.filter((s) => s.at > back);
    const first = after.find((s) => s.status === 200);
    const refusedAfter = after.filter((s) => s.status === 503).length;
    console.log(`back: first 200 ${first ? Math.round(first.at - back) : 'never'} ms after the heal, ${refusedAfter} answered 503 meanwhile`);
    expect(seen.filter((s) => s.at < back).every((s) => s.status === 503)).toBe(true);
    expect(first).toBeDefined();
    expect(first!.at - back).toBeLessThan(BACK_MS);

    // Two lines for the outage, no stack for a refused request.
    const records = log.records.slice(before);
    const down = records.filter((r) => String(r.msg).startsWith('database down'));
    const up = records.filter((r) => String(r.msg).startsWith('database up again'));
    expect(down).toHaveLength(1);
    expect(up).toHaveLength(1);
    expect(up[0]).toMatchObject({ level: 40, refused: expect.any(Number), downMs: expect.any(Number) });
    expect(up[0].refused as number).toBeGreaterThan(0);
    expect(records.filter((r) => (r.level as number) >= 50)).toEqual([]);
    expect(log.text).not.toContain('"stack"');
    const metrics = await app.inject({ method: 'GET', url: '/metrics' });
    const refused = Number(/^svc_db_refused_statements_total (\d+)/m.exec(metrics.body)?.[1]);
    expect(refused).toBeGreaterThanOrEqual(up[0].refused as number);
  }, 40_000);
});
