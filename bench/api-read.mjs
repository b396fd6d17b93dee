// Scenario 1: authenticated GET /v1/products?limit=20 against a bare Fastify hello-world, 50 connections.
// The full run measures in rounds (hello-world, service, same-size server, then again), so a slow
// stretch of a shared machine hits both sides; the ratio is the median of the rounds' ratios.
import { freePort, median, ratiosByRound, round, runAutocannon, runAutocannonOk, startProcess } from './lib.mjs';
import { seedProducts, settle, startService } from './service.mjs';

async function bareServer(env = {}) {
  const port = await freePort();
  const proc = await startProcess(['bench/bare-server.mjs'], { PORT: String(port), ...env }, 'ready');
  return { ...proc, url: `http://127.0.0.1:${port}/` };
}

const load = (url, duration, headers = {}) => runAutocannonOk({ url, connections: 50, duration, headers });

export async function apiRead(target, seeded, { duration, rounds }) {
  await seedProducts(seeded.db, seeded.workspaceId, 1000);
  await settle(seeded.db);

  const service = await startService(target, { SVC_WORKERS: '0' });
  const headers = { authorization: `Bearer ${seeded.apiKey}` };
  const url = `${service.url}/v1/products?limit=20`;
  await runAutocannon({ url, connections: 10, duration: 1, headers });
  const bodyBytes = (await (await fetch(url, { headers })).arrayBuffer()).byteLength;
  // Context for the ratio: a hello-world answers 17 bytes, a page of 20 products several KB, and
  // moving those bytes costs even a server that does nothing else.
  const hello = await bareServer();
  const sameSize = await bareServer({ BODY_BYTES: String(bodyBytes) });
  // Every server under load warms up for a second first, as the service did.
  for (const bare of [hello, sameSize]) await runAutocannon({ url: bare.url, connections: 10, duration: 1 });

  const runs = [];
  for (let i = 0; i < rounds; i++) {
    const baseline = await load(hello.url, duration);
    const result = await load(url, duration, headers);
    const same = await load(sameSize.url, duration);
    runs.push({ baseline, result, same, ratio: result.requests.average / baseline.requests.average });
  }
  const rss = service.peakRssMb();
  await Promise.all([service.stop(), hello.stop(), sameSize.stop()]);

  const rate = median(runs.map((r) => r.result.requests.average));
  const sameRate = median(runs.map((r) => r.same.requests.average));
  const ratio = median(runs.map((r) => r.ratio));
  const byRound = ratiosByRound(runs);
  return {
    name: 'API read, identical requests (GET /v1/products?limit=20 with one API key, 50 connections: requests in flight share one query)',
    value: round(rate, 0),
    unit: 'req/s',
    p99Ms: median(runs.map((r) => r.result.latency.p99)),
    baseline: round(median(runs.map((r) => r.baseline.requests.average)), 0),
    baselineName: 'bare Fastify hello-world',
    baselineP99Ms: median(runs.map((r) => r.baseline.latency.p99)),
    ratio: round(ratio, 3),
    extra: `bare Fastify answering the same ${bodyBytes}-byte body: ${round(sameRate, 0)} req/s, ratio ${round(median(runs.map((r) => r.result.requests.average / r.same.requests.average)), 3)}${byRound ? `; ${byRound}` : ''}`,
    target: 'ratio >= 0.40',
    pass: ratio >= 0.4,
    peakRssMb: rss,
    rounds: runs.map((r) => ({ rate: round(r.result.requests.average, 0), baseline: round(r.baseline.requests.average, 0), sameSize: round(r.same.requests.average, 0), ratio: round(r.ratio, 3) })),
  };
}
