// `node bench/instructions.mjs [--scenario=read|ingest|delivery] [--concurrency=1] [--requests=2000] [dir ...]`:
// user-space instructions per request of the service's main thread (and of all its threads, the
// garbage collector's helpers among them), counted by valgrind's callgrind. The delivery scenario
// counts a worker draining `requests` seeded deliveries to a local receiver, per delivery.
// Timings on a shared machine move by 15-30% between runs; instruction counts repeat within about
// 1%, so two builds (each dir holds a built dist/, default: this checkout) compare exactly. The
// service warms up uninstrumented (its JIT settles), then callgrind counts a fixed number of requests.
// At concurrency 1 every read runs its own query and every creation its own batch, so the count is
// what one request and one statement cost; at higher concurrency reads share queries (and creations
// batches) in numbers that depend on timing, and the count moves with them. Deliveries are claimed
// and recorded in batches whose sizes depend on timing too: on a busy machine their count moved by
// a third from run to run. Timers and polls that run while a request waits count too, so on a busy
// machine even a read's count moved by about 9%.
// Needs valgrind (Debian package `valgrind`). Kernel time (the socket writes) is not counted.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { channelSql } from '../dist/db/channels.js';
import { SecretBox } from '../dist/lib/secretbox.js';
import { createEndpoint } from '../dist/webhooks/endpoints/store.js';
import { DELIVERY_CHANNEL } from '../dist/engine/delivery/handoff.js';
import { seedDeliveries } from './delivery.mjs';
import { PG_URL, ROOT, freePort, freshSchema, sleep, startReceiver } from './lib.mjs';
import { MASTER_KEY, openSeeded, seedProducts } from './service.mjs';

const option = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const scenario = option('scenario', 'read');
const concurrency = Number(option('concurrency', 1));
const requests = Number(option('requests', 2000));
const warmup = Number(option('warmup', { read: 20_000, ingest: 6_000, delivery: 5_000 }[scenario]));
const dirs = process.argv.slice(2).filter((a) => !a.startsWith('--'));
if (dirs.length === 0) dirs.push(ROOT);

const schema = await freshSchema();
const target = { engine: 'postgres', url: schema.url, baseUrl: PG_URL, schema: schema.schema };
const seeded = await openSeeded(target);
await seedProducts(seeded.db, seeded.workspaceId, 1000);
if (scenario === 'ingest') {
  const box = new SecretBox(Buffer.from(MASTER_KEY, 'hex'));
  for (let i = 0; i < 3; i++) {
    await createEndpoint(seeded.db, box, { workspaceId: seeded.workspaceId, url: `https://receiver-${i}.example.com/hook`, subscribedEvents: ['product.*'] }, new Date());
  }
}
const receiver = scenario === 'delivery' ? await startReceiver('ok') : null;
const endpoint = receiver
  ? (await createEndpoint(seeded.db, new SecretBox(Buffer.from(MASTER_KEY, 'hex')), { workspaceId: seeded.workspaceId, url: receiver.url, subscribedEvents: ['product.*'] }, new Date())).row
  : null;
let seededSoFar = 0;
const pending = async () => (await seeded.db.query(`SELECT 1 FROM webhook_deliveries WHERE status = 'pending' LIMIT 1`)).length > 0;
/** Seeds `count` due deliveries, wakes the worker (it polls hourly) and waits until none is pending. */
async function drain(count, before = async () => {}) {
  await seedDeliveries(seeded.db, seeded.workspaceId, endpoint.id, seededSoFar + 1, count);
  seededSoFar += count;
  await before();
  await seeded.db.query(`SELECT pg_notify(${channelSql(DELIVERY_CHANNEL)}, 'bench')`);
  while (await pending()) await sleep(200);
}

const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
const body = JSON.stringify({ name: 'Bench product', price: { amount: 1999, currency: 'USD' }, metadata: { source: 'bench' } });
const read = scenario === 'read';
function send(port) {
  return new Promise((done, fail) => {
    const headers = { authorization: `Bearer ${seeded.apiKey}`, ...(read ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }) };
    const req = http.request({ agent, port, host: '127.0.0.1', method: read ? 'GET' : 'POST', path: read ? '/v1/products?limit=20' : '/v1/products', headers }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode < 300 ? done() : fail(new Error(`answer ${res.statusCode}`))));
    });
    req.on('error', fail);
    req.end(read ? undefined : body);
  });
}
async function load(port, count) {
  let sent = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => { while (sent++ < count) await send(port); }));
}

const out = mkdtempSync(join(tmpdir(), 'svc-callgrind-'));
let child = null;
try {
  for (const dir of dirs.map((d) => resolve(d))) {
    const port = await freePort();
    const workers = receiver ? { SVC_WORKERS: '1', SVC_ALLOW_PRIVATE_TARGETS: '1', SVC_POLL_INTERVAL: '1h' } : { SVC_WORKERS: '0' };
    // Under valgrind a statement's round trip takes many times as long: time-outs to match.
    const slow = { SVC_DB_CONNECT_TIMEOUT: '60s', SVC_DB_STATEMENT_TIMEOUT: '60s', SVC_DB_QUERY_TIMEOUT: '61s' };
    const env = { ...process.env, PORT: String(port), LOG_LEVEL: 'warn', SVC_MASTER_KEY: MASTER_KEY, DATABASE_URL: target.url, SVC_RATE_LIMIT_API_KEY: '1000000000', ...slow, ...workers };
    // The Node.js flags of that checkout's service (scripts/node-flags.mjs), as `npm start` gives them.
    const { NODE_FLAGS } = await import(join(dir, 'scripts/node-flags.mjs'));
    const args = ['--tool=callgrind', '--smc-check=all', '--instr-atstart=no', '--separate-threads=yes', `--callgrind-out-file=${out}/cg.%p`, process.execPath, ...NODE_FLAGS, join(dir, 'dist/cli/main.js'), 'serve'];
    child = spawn('valgrind', args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    await new Promise((ready, fail) => {
      child.stdout.on('data', (chunk) => String(chunk).includes('is listening on') && ready());
      child.on('exit', (code) => fail(new Error(`valgrind exited ${code}`)));
    });
    const on = async () => execFileSync('callgrind_control', ['-i', 'on', String(child.pid)], { stdio: 'ignore' });
    if (receiver) {
      await drain(warmup);
      await drain(requests, on);
    } else {
      await load(port, warmup);
      await on();
      await load(port, requests);
    }
    execFileSync('callgrind_control', ['-d', String(child.pid)], { stdio: 'ignore' });
    child.removeAllListeners('exit');
    child.kill('SIGKILL');
    // Thread 1 is the event loop; the others are V8's compiler and collector helpers and libuv's pool.
    const counted = (file) => Number(/^(?:summary|totals): (\d+)/m.exec(readFileSync(join(out, file), 'utf8'))[1]);
    const files = readdirSync(out).filter((f) => f.startsWith(`cg.${child.pid}.`));
    const main = counted(files.find((f) => f.endsWith('-01')));
    const all = files.reduce((sum, f) => sum + counted(f), 0);
    const unit = receiver ? `delivery (${requests} deliveries)` : `${scenario} request (${requests} requests, concurrency ${concurrency})`;
    process.stdout.write(`${dir}: ${Math.round(main / requests)} instructions on the main thread, ${Math.round(all / requests)} on all threads, per ${unit}\n`);
  }
} finally {
  child?.kill('SIGKILL');
  rmSync(out, { recursive: true, force: true });
  agent.destroy();
  receiver?.child.kill();
  await seeded.db.close();
  await schema.drop();
}
