// The webhook receiver of the benchmark, in its own process: counts deliveries and, from each body's
// `created`, the time from the change to its arrival. GET /stats reports (GET /count, cheaply, only
// the count and the first arrival); POST /reset clears them. The webhook-ids of timed arrivals are
// kept for the process's life (not cleared): `unique` and `repeated` count them.
//
// MODE=ok (default) answers 204 at once. MODE=hang never answers (a receiver gone silent). MODE=fleet
// answers by path, so one process stands for a fleet of receivers: /ok/<ms> answers 204 after <ms>
// milliseconds, /fail answers 500, /hang never answers; only /ok arrivals are timed.
import { createServer } from 'node:http';

const MODE = process.env.MODE ?? 'ok';
let count = 0;
let first = null;
let latencies = [];
const seen = new Set();
let repeated = 0;

function report(res, full) {
  res.setHeader('content-type', 'application/json');
  if (!full) return res.end(JSON.stringify({ count, first }));
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : null);
  res.end(JSON.stringify({ count, first, samples: sorted.length, p50: at(50), p95: at(95), p99: at(99), max: sorted.at(-1) ?? null, unique: seen.size, repeated }));
}

function answer(req, res) {
  if (MODE === 'hang') return;
  if (MODE === 'ok') {
    res.statusCode = 204;
    return res.end();
  }
  const [, kind, ms] = req.url.split('/');
  if (kind === 'hang') return;
  if (kind === 'fail') {
    res.statusCode = 500;
    return res.end('failing on purpose');
  }
  setTimeout(() => {
    res.statusCode = 204;
    res.end();
  }, Number(ms) || 0);
}

const server = createServer((req, res) => {
  if (req.method === 'GET' && (req.url === '/stats' || req.url === '/count')) return report(res, req.url === '/stats');
  if (req.method === 'POST' && req.url === '/reset') {
    count = 0;
    first = null;
    latencies = [];
    return res.end();
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const arrived = Date.now();
    first ??= arrived;
    count++;
    const timed = MODE !== 'fleet' || req.url.startsWith('/ok/');
    if (timed && req.headers['webhook-id']) {
      if (seen.has(req.headers['webhook-id'])) repeated++;
      else seen.add(req.headers['webhook-id']);
      try {
        const created = Date.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')).created);
        if (!Number.isNaN(created)) latencies.push(arrived - created);
      } catch {
        // not an event body: counted, not timed
      }
    }
    answer(req, res);
  });
});
server.keepAliveTimeout = 60_000;
server.headersTimeout = 0;
server.requestTimeout = 0;
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('ready\n'));
