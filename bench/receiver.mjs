// The webhook receiver of the benchmark, in its own process: answers 204, counts deliveries and,
// from each body's `created`, the time from the change to its arrival. GET /stats reports (GET /count,
// cheaply, only the count and the first arrival); POST /reset clears.
import { createServer } from 'node:http';

let count = 0;
let first = null;
let latencies = [];

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    const sorted = [...latencies].sort((a, b) => a - b);
    const at = (p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : null);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ count, first, samples: sorted.length, p50: at(50), p95: at(95), p99: at(99), max: sorted.at(-1) ?? null }));
    return;
  }
  if (req.method === 'GET' && req.url === '/count') {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ count, first }));
    return;
  }
  if (req.method === 'POST' && req.url === '/reset') {
    count = 0;
    first = null;
    latencies = [];
    res.end();
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const arrived = Date.now();
    first ??= arrived;
    count++;
    if (req.headers['webhook-id']) {
      try {
        const created = Date.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')).created);
        if (!Number.isNaN(created)) latencies.push(arrived - created);
      } catch {
        // not an event body: counted, not timed
      }
    }
    res.statusCode = 204;
    res.end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('ready\n'));
