// A trace collector that discards what it gets, in its own process: with BENCH_TRACES=1 the services
// under test export their spans here (OTLP over HTTP, protobuf), so a run measures what tracing
// costs the service and not what a collector does with the spans.
import { createServer } from 'node:http';

let requests = 0;
let bytes = 0;
const server = createServer((req, res) => {
  req.on('data', (chunk) => (bytes += chunk.length));
  req.on('end', () => {
    requests++;
    if (req.method === 'GET') {
      res.setHeader('content-type', 'application/json');
      return res.end(JSON.stringify({ requests, bytes }));
    }
    res.statusCode = 200;
    res.setHeader('content-type', req.headers['content-type'] ?? 'application/x-protobuf');
    res.end();
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log(`otlp sink listening on ${process.env.PORT}`));
