import type { FastifyBaseLogger } from 'fastify';
import { writeFileSync } from 'node:fs';
import { createDemo, type DemoSet } from './demo.js';
import { buildApp } from '../server/app.js';
import { refreshStatistics } from '../db/statistics.js';
import { startBackground } from '../server/background.js';
import { createSignInCode, signInUrl } from '../account/sign-in-store.js';
import { terminalLines } from '../http/log-lines.js';
import { loggerOptions } from '../http/logger.js';
import type { Config } from '../lib/config.js';
import type { AppContext } from '../server/context.js';
import { boundPort, startOpsServer } from '../server/metrics-server.js';
import { exceptOutages } from '../server/outages.js';
import { startTracing, stopTracing } from '../ops/tracing/start.js';
import { openContext } from '../server/runtime.js';
import { warmUp } from '../server/warm-up.js';
import type { DeliveryWorkerOptions } from '../engine/delivery/worker.js';
import { startWorkers } from '../engine/delivery/workers.js';
import { demoFile, demoOwner, readDemo } from './demo-file.js';
import { demoSummary, tryLine } from './demo-text.js';
import { recordPublicUrl } from './public-url.js';
import { exitAfter, leftLine, recordUntil, stopDeadlineMs, stopSignals, waitingLine } from './signals.js';

/** How long a start waits at most for the workers' backlog moves before it opens the port. */
const SETTLE_MOST_MS = 3_000;

/**
 * `svc serve`: the API and (unless SVC_WORKERS=0) the webhook delivery workers in one process. With `--demo`,
 * an empty embedded database is seeded on first start and its credentials are kept beside the data
 * (mode 0600, like the master key) so every later `npm start` can print them again.
 */
export async function serve(config: Config, options: { demo: boolean }): Promise<void> {
  const signals = stopSignals();
  // Before anything that makes spans; nothing is loaded unless OTEL_* settings ask for traces.
  await startTracing();
  const ctx = await openContext(config, { owner: true });
  const app = await buildApp(ctx, {
    logger: loggerOptions(config.logLevel, config.logFormat === 'lines' ? terminalLines() : undefined),
  });
  const demo = options.demo ? await ensureDemo(ctx) : null;
  // The workers' and the warm-up's plans are made on the planner's statistics of the tables as a
  // start finds them, rather than dropped by an ANALYZE of the refresh just after the port opens.
  const statisticsFresh = await refreshStatistics(ctx.db).then(
    () => true,
    (err) => (app.log.warn({ err }, 'statistics refresh failed'), false),
  );
  // The workers start before the port opens: their first claim, and the moves of backlogs left by
  // the last run, go on beside the warm-up rather than beside the first clients' requests.
  const workers = config.workers > 0 ? await startWorkers(ctx, config.workers, deliveryLog(app.log)) : null;
  // A warm-up that fails costs the first clients some speed, never the start.
  await warmUp(app, ctx, config.warmUpRounds).then(
    (ms) => app.log.debug({ ms: Math.round(ms) }, 'warmed up'),
    (err) => app.log.warn({ err }, 'warm-up failed; serving without it'),
  );
  // Moves of thousands of rows still under way when the warm-up ends finish before the port opens.
  await workers?.settle(SETTLE_MOST_MS);
  await app.listen({ port: config.port, host: config.host });
  // Asked for any free port (PORT=0): links and the banner name the one taken.
  if (config.port === 0) config.publicUrl = config.publicUrl.replace(/:0$/, `:${boundPort(app)}`);
  // Where dashboard links made beside this process point (svc admin dashboard-link).
  const forgetPublicUrl = recordPublicUrl(config);
  const ops = config.metricsPort !== null ? await startOpsServer(ctx, { redis: true }, { port: config.metricsPort, host: config.host }) : null;
  // A database outage is logged once when it begins and once when it ends (outages.ts), not by every job it stops.
  const background = startBackground(ctx, exceptOutages((err, what) => app.log.error({ err }, `${what} failed`)), { statisticsFresh });
  // Recoveries left running by an earlier start (or a process that died) go on from their cursor; app.close() stops them.
  ctx.recoveries.start(exceptOutages((err) => app.log.error({ err }, 'webhook recovery batch failed; it is taken up again later')));
  // Notifications not yet pushed (another process's, or left by a stop) are looked for now and every minute; app.close() stops it.
  ctx.push.start(exceptOutages((err, during) => app.log.error({ err }, `${during} failed`)));

  // Requests in progress finish and new ones get 503 (server/app.ts), attempts in flight end and are
  // recorded (up to the delivery time-out); a stop that cannot finish (the database silent) still
  // exits, once the deadline has passed.
  const stop = async (signal: string) => {
    // First: load balancers polling /readyz stop sending traffic here.
    ctx.readiness.stop();
    forgetPublicUrl();
    app.log.info({ signal }, 'shutting down');
    exitAfter(stopDeadlineMs(config), () => app.log.error('shutdown did not finish in time: exiting'));
    const until = recordUntil(config);
    if (workers) app.log.info(workers.pending(), waitingLine(workers.pending()));
    await app.close();
    await background.stop();
    const left = leftLine((await workers?.stop(until)) ?? 0, config.leaseMs);
    if (left) app.log.warn(left);
    await ops?.close();
    await ctx.rateLimits.close();
    await ctx.db.close();
    await stopTracing().catch((err) => app.log.error({ err }, 'exporting the last spans failed'));
    process.exit(0);
  };
  // Stopped while starting: no banner, which would say that it is up.
  if (signals.ready(stop)) return;
  const signIn = demo ? await demoSignInLink(ctx, demo) : null;
  // Only now: whoever waits for this line may signal at once, and must find the handlers in place.
  printBanner(config, demo, signIn);
}

/** Delivery faults in the service's log: the first of a streak, then its end. */
function deliveryLog(log: FastifyBaseLogger): Pick<DeliveryWorkerOptions, 'onError' | 'onRecover'> {
  return {
    onError: (err, during) => log.error({ err }, `delivery ${during} failed; retrying, and logging again only once it works`),
    onRecover: (during, failures) => log.info({ failures }, `delivery ${during} works again`),
  };
}

async function ensureDemo(ctx: AppContext): Promise<DemoSet | null> {
  if (ctx.config.databaseUrl) return null;
  const kept = readDemo(ctx.config.dataDir);
  if (kept) return kept;
  const [{ count }] = await ctx.db.query<{ count: number }>('SELECT count(*)::int AS count FROM organizations');
  if (count > 0) return null;
  const demo = await createDemo(ctx.db, ctx.config.publicUrl, ctx.clock.now(), ctx.secrets);
  writeFileSync(demoFile(ctx.config.dataDir), JSON.stringify(demo, null, 2) + '\n', { mode: 0o600 });
  return demo;
}

/** A fresh one-time dashboard sign-in link for the demo owner, at every start (the last one may be used or expired). */
async function demoSignInLink(ctx: AppContext, demo: DemoSet): Promise<string> {
  const owner = demoOwner(demo);
  const { code } = await createSignInCode(ctx.db, owner.id, ctx.clock.now());
  return `Dashboard sign-in for ${owner.email} (one use, 10 minutes): ${signInUrl(ctx.config.publicUrl, code)}`;
}

/**
 * What a person needs first, first: the sign-in link right under the address, and the commands
 * that make another link and print the credentials again once the log has pushed them away.
 */
function printBanner(config: Config, demo: DemoSet | null, signIn: string | null): void {
  const lines = [``, `svc is listening on ${config.publicUrl}`];
  if (signIn) lines.push(``, signIn, `Another link: npx svc admin dashboard-link   (the credentials again: npx svc demo --show)`, ``);
  lines.push(
    `API reference: ${config.publicUrl}/docs (OpenAPI document: /openapi.json)`,
    signIn
      ? `Dashboard: ${config.publicUrl}/dashboard/ (open the sign-in link above first)`
      : `Dashboard: ${config.publicUrl}/dashboard/ (sign in with a link from svc admin dashboard-link --user EMAIL, or a personal access token)`,
  );
  if (demo) {
    // The credentials file was written at the first start; the address is this start's.
    lines.push(``, ...demoSummary(demo), `All demo credentials: ${demoFile(config.dataDir)}`, ``, tryLine(demo, config.publicUrl));
  }
  process.stdout.write(lines.join('\n') + '\n\n');
}
