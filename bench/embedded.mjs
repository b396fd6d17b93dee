// Scenario: the embedded default as a user meets it. `svc serve --demo` on an empty data folder
// starts a PostgreSQL server of its own: how long the first start and a restart to the first 200
// take, the memory of the service with the server it started, under reads, creations and
// deliveries, and whether anything is left running after SIGTERM.
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NODE_FLAGS } from '../scripts/node-flags.mjs';
import { ROOT, freePort, median, round, runAutocannonOk, sleep, startReceiver, steadyLoad } from './lib.mjs';

const RESTARTS = 3;

/** The postmaster's pid, from the data folder. */
const postmaster = (dataDir) => Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/** `pid` and its children (the server's backends and helpers), from /proc. */
function tree(pid) {
  const parents = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // Gone meanwhile.
    }
  }
  return [pid, ...[...parents].filter(([, parent]) => parent === pid).map(([child]) => child)];
}

/** Proportional set size in MB: shared pages (the server's shared buffers) counted once across processes. */
function pssMb(pids) {
  let kb = 0;
  for (const pid of pids) {
    try {
      kb += Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
    } catch {
      // Gone meanwhile.
    }
  }
  return kb / 1024;
}

/** `svc serve --demo` on `dataDir`; resolves once it listens, with how long that took. */
async function serve(dataDir, port) {
  const started = performance.now();
  const child = spawn(process.execPath, [...NODE_FLAGS, 'dist/cli/main.js', 'serve', '--demo'], {
    cwd: ROOT,
    env: { ...process.env, SVC_DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn', SVC_ALLOW_PRIVATE_TARGETS: '1', SVC_RATE_LIMIT_API_KEY: '1000000000' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  for (;;) {
    if (output.includes('is listening on')) break;
    if (child.exitCode !== null) throw new Error(`svc serve exited: ${output}`);
    await sleep(10);
  }
  return { child, exited, listeningMs: performance.now() - started, stop: () => (child.kill('SIGTERM'), exited) };
}

export async function embeddedDefault(_target, _seeded, { duration }) {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-embedded-'));
  chmodSync(dataDir, 0o755);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const receiver = await startReceiver();
  try {
    const first = await serve(dataDir, port);
    const demo = JSON.parse(readFileSync(join(dataDir, 'demo.json'), 'utf8'));
    const apiKey = demo.workspaces[0].apiKey;
    const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
    // The demo endpoint, pointed at the receiver and active: every creation is delivered.
    await fetch(`${base}/v1/webhooks/endpoints/${demo.sample.webhookEndpoint.id}`, { method: 'PATCH', headers, body: JSON.stringify({ url: receiver.url, active: true }) });
    await first.stop();

    const restarts = [];
    for (let i = 0; i < RESTARTS; i++) {
      const started = performance.now();
      const service = await serve(dataDir, port);
      for (;;) {
        const res = await fetch(`${base}/v1/products`, { headers }).catch(() => null);
        if (res?.status === 200) break;
        await sleep(5);
      }
      restarts.push(performance.now() - started);
      if (i < RESTARTS - 1) await service.stop();
      else {
        // Under load: reads, creations at 100/s and their deliveries; memory sampled meanwhile.
        const pids = () => [service.child.pid, ...tree(postmaster(dataDir))];
        let peak = 0;
        const sampler = setInterval(() => (peak = Math.max(peak, pssMb(pids()))), 200);
        await Promise.all([runAutocannonOk({ url: `${base}/v1/products?limit=20`, connections: 50, duration, headers }), steadyLoad(base, apiKey, 100, duration)]);
        clearInterval(sampler);
        const delivered = (await receiver.count()).count;
        const server = postmaster(dataDir);
        await service.stop();
        const left = tree(server).filter(alive);
        return {
          name: 'Embedded default (svc serve --demo on a data folder: its own PostgreSQL server)',
          value: round(median(restarts), 0),
          unit: 'ms from restart to the first 200',
          extra: `first start on an empty folder ${round(first.listeningMs, 0)} ms to listening; restarts ${restarts.map((ms) => round(ms, 0)).join(', ')} ms; peak memory of the service and its server ${round(peak, 0)} MB (PSS) under ${duration} s of reads at 50 connections, 100 creations/s and their ${delivered} deliveries; after SIGTERM ${left.length === 0 ? 'nothing left running' : `${left.length} processes left: ${left.join(', ')}`}`,
          target: 'restart <= 3000 ms, memory <= 350 MB, nothing left',
          pass: median(restarts) <= 3000 && peak <= 350 && left.length === 0,
          peakRssMb: peak,
        };
      }
    }
  } finally {
    await receiver.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

embeddedDefault.standalone = true;
