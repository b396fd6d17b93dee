import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createDemo, type DemoSet } from '../admin/demo.js';
import { buildApp } from '../app.js';
import { loggerOptions } from '../http/logger.js';
import type { Config } from '../config.js';
import type { AppContext } from '../context.js';
import { openContext } from '../runtime.js';
import { startWorkers } from '../webhooks/engine/worker.js';

/**
 * `svc serve`: the API and (unless SVC_WORKERS=0) the webhook delivery workers in one process. With `--demo`,
 * an empty embedded database is seeded on first start and its credentials are kept beside the data
 * (mode 0600, like the master key) so every later `npm start` can print them again.
 */
export async function serve(config: Config, options: { demo: boolean }): Promise<void> {
  const ctx = await openContext(config);
  const app = await buildApp(ctx, {
    logger: loggerOptions(config.logLevel),
  });
  const demo = options.demo ? await ensureDemo(ctx) : null;
  await app.listen({ port: config.port, host: config.host });
  const workers = config.workers > 0 ? await startWorkers(ctx, config.workers, (err, during) => app.log.error({ err }, `delivery ${during} failed`)) : null;
  printBanner(config, demo);

  const stop = async (signal: string) => {
    app.log.info({ signal }, 'shutting down');
    await app.close();
    await workers?.stop();
    await ctx.rateLimits.close();
    await ctx.db.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}

async function ensureDemo(ctx: AppContext): Promise<DemoSet | null> {
  if (ctx.config.databaseUrl) return null;
  const file = join(ctx.config.dataDir, 'demo.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as DemoSet;
  const [{ count }] = await ctx.db.query<{ count: number }>('SELECT count(*)::int AS count FROM organizations');
  if (count > 0) return null;
  const demo = await createDemo(ctx.db, ctx.config.publicUrl, ctx.clock.now());
  writeFileSync(file, JSON.stringify(demo, null, 2) + '\n', { mode: 0o600 });
  return demo;
}

function printBanner(config: Config, demo: DemoSet | null): void {
  const lines = [``, `svc is listening on ${config.publicUrl}`, `API reference: ${config.publicUrl}/docs (OpenAPI document: /openapi.json)`];
  if (demo) {
    const [ws] = demo.workspaces;
    const owner = demo.users.find((u) => u.role === 'owner')!;
    lines.push(
      ``,
      `Demo workspace "${ws.slug}" (${ws.id})`,
      `  API key:      ${ws.apiKey}`,
      `  test API key: ${ws.testApiKey}`,
      `  owner token:  ${owner.token}   (${owner.email})`,
      `All demo credentials: ${join(config.dataDir, 'demo.json')}`,
      ``,
      `Try: curl -H "Authorization: Bearer ${ws.apiKey}" ${config.publicUrl}/v1/products`,
    );
  }
  process.stdout.write(lines.join('\n') + '\n\n');
}
