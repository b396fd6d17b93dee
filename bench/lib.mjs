// Shared plumbing of the benchmark: processes, the database, load generation, measurements.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleepUntil } from 'node:timers/promises';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { Pool } from 'undici';
import { idTimePrefix } from '../dist/lib/ids.js';

export const ROOT = new URL('..', import.meta.url).pathname;
export const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/**
 * One connection for statements of the benchmark's own (seeding, EXPLAIN, sessions with BEGIN or
 * PREPARE), without the service's settings: `query` answers `{ rows }`.
 */
/** Without fetched types postgres.js cannot send a JavaScript array: it goes as an array literal. */
const asParameter = (value) =>
  Array.isArray(value) ? `{${value.map((v) => (v === null ? 'NULL' : `"${String(v).replace(/["\\]/g, '\\$&')}"`)).join(',')}}` : value;

export function sqlClient(url) {
  const sql = postgres(url, { max: 1, onnotice: () => {}, fetch_types: false, max_lifetime: null });
  return {
    connect: async () => {},
    query: async (text, params = []) => ({ rows: [...(await sql.unsafe(text, params.map(asParameter)))] }),
    end: () => sql.end({ timeout: 5 }),
    /** A string as an SQL literal, for statements that cannot take parameters (EXECUTE, as node-postgres's escapeLiteral). */
    escapeLiteral: (text) => {
      const quoted = `'${text.replace(/'/g, "''")}'`;
      return text.includes('\\') ? ` E${quoted.replace(/\\/g, '\\\\')}` : quoted;
    },
  };
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** A fresh schema on the server at `base` (the system PostgreSQL by default) and a URL whose connections use it. */
export async function freshSchema(base = PG_URL) {
  const schema = `bench_${randomBytes(4).toString('hex')}`;
  const run = async (statement) => {
    const c = sqlClient(base);
    try {
      await c.query(statement);
    } finally {
      await c.end();
    }
  };
  await run(`CREATE SCHEMA ${schema}`);
  const url = new URL(base);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return { schema, url: url.toString(), drop: () => run(`DROP SCHEMA ${schema} CASCADE`) };
}

/** Peak resident set of a process (VmHWM), in MB. */
export function peakRssMb(pid) {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** CPU time (user + system) a process has used so far, in seconds (Linux /proc). */
export function cpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

/**
 * CPU time used so far by every process named `postgres` on this machine (the server's backends and
 * its background writers), in seconds: what the database spends, when it runs here. A backend that
 * has ended counts too: its time moves to the server's main process, which reaped it (cutime, cstime).
 */
export function postgresCpuSeconds() {
  return namedCpuSeconds('postgres');
}

/** CPU time used so far by every process named `redis-server` on this machine, in seconds. */
export function redisCpuSeconds() {
  return namedCpuSeconds('redis-server');
}

/** CPU time so far of every process with this name (as /proc shows it), and of its reaped children. */
function namedCpuSeconds(name) {
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== name) continue;
      const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      total += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    } catch {
      // The process ended meanwhile.
    }
  }
  return total / 100;
}

/** Idle time of all the machine's cores so far, in seconds (/proc/stat). */
export function idleSeconds() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
  return (Number(fields[4]) + Number(fields[5])) / 100;
}

/** Children started and not yet exited: a scenario that fails half-way must not leave one running. */
const running = new Set();

/** Stops every child still running (run.mjs, after a scenario failed and at the end). */
export async function stopChildren() {
  await Promise.all([...running].map((child) => stopChild(child)));
}

function stopChild(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', resolve);
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
  });
}

/** Starts a child and resolves once `ready` (a string on stdout, or a port answering). */
export async function startProcess(args, env, readyText) {
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let output = '';
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`start timed out: ${args.join(' ')}\n${output}`)), 60_000);
    const onExit = (code) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code}: ${args.join(' ')}\n${output}`));
    };
    const onData = (chunk) => {
      output += chunk;
      if (output.includes(readyText)) {
        clearTimeout(timer);
        child.off('exit', onExit);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk) => (output += chunk));
    // BENCH_SERVICE_LOG=file: the service's own output, for a scenario that misbehaves.
    if (process.env.BENCH_SERVICE_LOG) {
      const log = createWriteStream(process.env.BENCH_SERVICE_LOG, { flags: 'a' });
      child.stdout.pipe(log);
      child.stderr.pipe(log);
    }
    child.on('exit', onExit);
  }).catch(async (error) => {
    // A child that did not become ready is stopped (if it still runs) before the error goes up.
    await stopChild(child);
    throw error;
  });
  return {
    child,
    peakRssMb: () => peakRssMb(child.pid),
    stop: () => stopChild(child),
  };
}

export function runAutocannon(options) {
  return new Promise((resolve, reject) => {
    autocannon({ ...options }, (error, result) => (error ? reject(error) : resolve(result)));
  });
}

/** runAutocannon, refusing a run in which any answer was not 2xx or any request failed. */
export async function runAutocannonOk(options) {
  const result = await runAutocannon(options);
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} non-2xx answers and ${result.errors} errors from ${options.url}`);
  return result;
}

/** "ratio by round a, b, c" for a run of several rounds; nothing for one. */
export function ratiosByRound(runs) {
  return runs.length > 1 ? `ratio by round ${runs.map((r) => round(r.ratio, 3)).join(', ')}` : undefined;
}

export function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export const round = (n, digits = 1) => (n === null || n === undefined ? null : Number(n.toFixed(digits)));

/** Starts bench/receiver.mjs on a free port; `mode` is its MODE (ok, hang, fleet). */
export async function startReceiver(mode = 'ok') {
  const port = await freePort();
  const proc = await startProcess(['bench/receiver.mjs'], { PORT: String(port), MODE: mode }, 'ready');
  const base = `http://127.0.0.1:${port}`;
  return {
    ...proc,
    base,
    url: `${base}/hook`,
    stats: async () => (await fetch(`${base}/stats`)).json(),
    count: async () => (await fetch(`${base}/count`)).json(),
    reset: () => fetch(`${base}/reset`, { method: 'POST' }),
  };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Product creations at a steady rate, evenly spaced (one every 1000/rate ms), not in per-second
 * bursts as autocannon's rate option sends them, so the figure is the pipeline's latency rather than
 * a burst's queueing. With several API keys, each request takes the next key in turn.
 */
export async function steadyLoad(url, apiKeys, rate, seconds) {
  const keys = Array.isArray(apiKeys) ? apiKeys : [apiKeys];
  const target = new URL(url);
  const pool = new Pool(target.origin, { connections: 32 });
  const total = Math.round(rate * seconds);
  const interval = 1000 / rate;
  const started = performance.now();
  const inFlight = [];
  let failed = 0;
  /** The first answers that were not 201, as `status code: message`, to say why. */
  const failures = [];
  for (let i = 0; i < total; i++) {
    const wait = started + i * interval - performance.now();
    if (wait > 1) await sleepUntil(wait);
    inFlight.push(
      pool
        .request({ path: '/v1/products', method: 'POST', headers: { authorization: `Bearer ${keys[i % keys.length]}`, 'content-type': 'application/json' }, body: '{"name":"Latency probe"}' })
        .then(async (res) => {
          const body = await res.body.text();
          if (res.statusCode === 201) return;
          failed++;
          if (failures.length < 5) failures.push(`${res.statusCode} ${body.slice(0, 200)}`);
        }),
    );
  }
  await Promise.all(inFlight);
  const achieved = total / ((performance.now() - started) / 1000);
  await pool.close();
  return { failed, failures, achieved };
}

/**
 * `perEndpoint` pending deliveries, due now, for each of `endpointIds` (all of `workspaceId`), with
 * their events: a backlog. Ids begin with the time now, as the service's do (the tables are
 * partitioned by it), then `tag`, so that several backlogs do not collide.
 */
export async function seedBacklog(db, workspaceId, endpointIds, perEndpoint, tag) {
  const now = new Date();
  const evt = idTimePrefix('evt', now) + tag;
  const whd = idTimePrefix('whd', now) + tag;
  await db.query(
    `INSERT INTO events (id, workspace_id, type, subject_type, subject_id, body, created_at)
     SELECT $3 || lpad(to_hex(g), 16 - length($4), '0'), $1, 'product.created', 'product', 'prd_' || $4 || lpad(to_hex(g), 20, '0'),
            '{"id":"' || $3 || lpad(to_hex(g), 16 - length($4), '0') || '","type":"product.created","created":"2026-01-01T00:00:00.000Z"}', now()
       FROM generate_series(1, $2::int) AS g`,
    [workspaceId, perEndpoint, evt, tag],
  );
  await db.query(
    `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, attempt, next_attempt_at, created_at)
     SELECT $4 || lpad(to_hex(g), 10 - length($6), '0') || lpad(to_hex(e.n), 6, '0'), $1, e.id, $5 || lpad(to_hex(g), 16 - length($6), '0'),
            'product.created', 'pending', 0, date_trunc('milliseconds', now()), date_trunc('milliseconds', now())
       FROM generate_series(1, $3::int) AS g, unnest($2::text[]) WITH ORDINALITY AS e (id, n)`,
    [workspaceId, endpointIds, perEndpoint, whd, evt, tag],
  );
}
