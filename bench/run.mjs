// `npm run bench [-- --quick]`: every scenario beside its baseline, measured in the same run, written
// to bench/results/ as markdown and JSON with a description of the machine. BENCH_SECONDS sets a quick
// run's load time (3 s), for alternating runs long enough to see a few percent.
import { execSync } from 'node:child_process';
import { chmodSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, freemem, totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { apiRead } from './api-read.mjs';
import { deepPage } from './deep-page.mjs';
import { delivery, orderedDelivery } from './delivery.mjs';
import { destinations } from './destinations.mjs';
import { embeddedDefault } from './embedded.mjs';
import { burst } from './burst.mjs';
import { day } from './day.mjs';
import { fleet, fleetMid, fleetPeak } from './fleet.mjs';
import { ingest } from './ingest.mjs';
import { latency } from './latency.mjs';
import { noisyNeighbour } from './noisy-neighbour.mjs';
import { stream } from './stream.mjs';
import { apiReadMixed } from './api-read-mixed.mjs';
import { REDIS_URL } from './bullmq-peer.mjs';
import { scale } from './scale.mjs';
import { PG_URL, ROOT, freePort, freshSchema, sqlClient, startProcess, stopChildren } from './lib.mjs';
import { openSeeded, settle } from './service.mjs';

const quick = process.argv.includes('--quick');
const settings = quick
  ? { duration: Number(process.env.BENCH_SECONDS ?? 3), rows: 100_000, deliveries: 5_000, rounds: 1, scaleDeliveries: 200_000, dayMinutes: 20 }
  : { duration: 10, rows: 1_000_000, deliveries: 50_000, rounds: 5, scaleDeliveries: 10_000_000, dayMinutes: 20 };

async function machine() {
  const client = sqlClient(PG_URL);
  const [{ server_version }] = (await client.query('SHOW server_version')).rows;
  await client.end();
  // Redis serves the delivery scenario's peer only.
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  const redisVersion = await redis
    .connect()
    .then(() => redis.info('server'))
    .then((info) => /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown', () => 'not reached');
  redis.disconnect();
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    freeMemoryGiB: Math.round(freemem() / 2 ** 30),
    node: process.version,
    postgres: server_version,
    redis: redisVersion,
    kernel: execSync('uname -sr').toString().trim(),
  };
}

/**
 * The embedded engine: the server `svc serve` starts by itself when no DATABASE_URL is set, started
 * here once for the run in a folder of its own (dist/db/embedded), and given to the service by URL
 * like the system's, so that both engines run every scenario the same way.
 */
let embedded = null;
async function embeddedUrl() {
  if (!embedded) {
    const { folderServer } = await import('../dist/db/embedded/folder.js');
    const dir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
    chmodSync(dir, 0o755);
    const server = await folderServer(dir, { owner: true, log: () => {} });
    embedded = { url: server.url, stop: async () => (await server.stop(), rmSync(dir, { recursive: true, force: true })) };
  }
  return embedded.url;
}

/** Runs one scenario on a fresh schema of the given engine's server. */
async function onFresh(engine, scenario) {
  if (scenario.standalone) return scenario(null, null, settings);
  const base = engine === 'embedded' ? await embeddedUrl() : PG_URL;
  const schema = await freshSchema(base);
  const target = { engine, url: schema.url, baseUrl: base, schema: schema.schema };
  const seeded = await openSeeded(target);
  await settle(seeded.db);
  try {
    return await scenario(target, seeded, settings);
  } finally {
    await seeded.db.close();
    await schema.drop();
  }
}

// BENCH_TRACES=1: every service under test traces (OTEL_* settings, default sampler), exporting to a
// local collector that discards the spans (otlp-sink.mjs).
if (process.env.BENCH_TRACES === '1') {
  const port = await freePort();
  await startProcess(['bench/otlp-sink.mjs'], { PORT: String(port) }, 'otlp sink listening');
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${port}`;
  process.stdout.write(`tracing on, exporting to ${process.env.OTEL_EXPORTER_OTLP_ENDPOINT}\n`);
}

const only = process.argv.find((a) => a.startsWith('--only='))?.slice(7).split(',');
const engines = process.argv.find((a) => a.startsWith('--engine='))?.slice(9).split(',');
const SCENARIOS = [
  ['postgres', apiReadMixed],
  ['postgres', apiRead],
  ['postgres', ingest],
  ['postgres', delivery],
  ['postgres', orderedDelivery],
  ['postgres', destinations],
  ['postgres', latency],
  ['postgres', noisyNeighbour],
  ['postgres', fleet],
  ['postgres', fleetPeak],
  ['postgres', fleetMid],
  ['postgres', burst],
  ['postgres', deepPage],
  ['postgres', stream],
  ['postgres', scale],
  ['postgres', day],
  ['embedded', apiReadMixed],
  ['embedded', ingest],
  ['embedded', delivery],
  ['embedded', embeddedDefault],
  // A day (40 minutes: with retention and without) runs in full runs, or in a quick one when named.
].filter(([engine, scenario]) => (only ? only.includes(scenario.name) : !(quick && scenario === day)) && (!engines || engines.includes(engine)));

const results = [];
for (const [engine, scenario] of SCENARIOS) {
  process.stdout.write(`running ${scenario.name} on ${engine}...\n`);
  let result;
  try {
    result = await onFresh(engine, scenario);
  } catch (error) {
    // One scenario failing does not lose the others' figures: it is reported as failed, and the
    // run exits non-zero after writing the results.
    process.stdout.write(`  ${scenario.name} failed: ${error?.stack ?? error}\n`);
    process.exitCode = 1;
    // What the scenario started (a receiver, a service) would otherwise keep the run from ending.
    await stopChildren();
    result = { name: `${scenario.name}: failed (${String(error?.message ?? error).slice(0, 200)})`, value: null, unit: '', target: '', pass: false };
  }
  results.push({ engine, ...result });
  for (const r of [result, result.peer, ...(result.more ?? [])].filter(Boolean)) {
    process.stdout.write(`  ${r.name}: ${r.value} ${r.unit} (baseline ${r.baseline}, ratio ${r.ratio}) ${r.pass ? 'PASS' : 'MISS'}\n`);
  }
}

await stopChildren();
await embedded?.stop();
const report = { date: new Date().toISOString(), quick, traces: process.env.BENCH_TRACES === '1', machine: await machine(), results };
const peakOf = (engine) => Math.max(0, ...results.filter((r) => r.engine === engine).map((r) => r.peakRssMb ?? 0));
report.peakRssMb = { postgres: peakOf('postgres'), embedded: peakOf('embedded') };
// Each scenario run on both engines: the embedded server's figure against the system server's.
const paired = results
  .filter((r) => r.engine === 'embedded' && typeof r.value === 'number')
  .map((e) => [e, results.find((p) => p.engine === 'postgres' && p.name === e.name)])
  .filter(([, p]) => p && typeof p.value === 'number');

const lines = [
  `# Benchmark ${report.date}${quick ? ' (quick)' : ''}${report.traces ? ' (tracing on)' : ''}`,
  '',
  `Machine: ${report.machine.cpu}, ${report.machine.cores} cores, ${report.machine.memoryGiB} GiB, ${report.machine.kernel}, Node ${report.machine.node}, PostgreSQL ${report.machine.postgres}, Redis ${report.machine.redis}`,
  '',
  '| engine | scenario | result | p99 ms | baseline | baseline p99 ms | ratio | target | |',
  '|---|---|---|---|---|---|---|---|---|',
  // A scenario measured against a peer as well (delivery) has a second row: the service beside the peer.
  ...results.flatMap((r) => [r, ...(r.peer ? [{ engine: r.engine, ...r.peer }] : []), ...(r.more ?? []).map((m) => ({ engine: r.engine, ...m }))]).map(
    (r) =>
      `| ${r.engine} | ${r.name} | ${r.value} ${r.unit}${r.extra ? ` (${r.extra})` : ''} | ${r.p99Ms ?? ''} | ${r.baseline ?? ''} (${r.baselineName ?? ''}) | ${r.baselineP99Ms ?? ''} | ${r.ratio ?? ''} | ${r.target} | ${r.pass ? 'pass' : 'MISS'} |`,
  ),
  '',
  `Peak RSS of the service across the run: ${report.peakRssMb.postgres.toFixed(0)} MB on the system's PostgreSQL (target <= 300 MB); the embedded default's memory with its server is in its own row`,
  '',
  ...(paired.length
    ? [
        '| scenario | embedded | system PostgreSQL | embedded / system (target >= 0.9) |',
        '|---|---|---|---|',
        ...paired.map(([e, p]) => `| ${e.name.split(' (')[0]} | ${e.value} ${e.unit} | ${p.value} ${p.unit} | ${(e.value / p.value).toFixed(3)} |`),
        '',
      ]
    : []),
  // A scenario's own tables and plans (the scale scenario's), after the summary.
  ...results.filter((r) => r.details).flatMap((r) => [r.details, '']),
];
const dir = join(ROOT, 'bench/results');
mkdirSync(dir, { recursive: true });
const stamp = report.date.replace(/[:.]/g, '-');
writeFileSync(join(dir, `${stamp}.json`), JSON.stringify(report, null, 2) + '\n');
writeFileSync(join(dir, `${stamp}.md`), lines.join('\n'));
writeFileSync(join(dir, 'latest.md'), lines.join('\n'));
process.stdout.write('\n' + lines.join('\n') + '\n');
