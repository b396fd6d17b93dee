// Scenario 1: authenticated GET /v1/products?limit=20 against a bare Fastify hello-world, 50 connections.
import { freePort, round, runAutocannon, startProcess } from './lib.mjs';
import { seedProducts, settle, startService } from './service.mjs';

export async function apiRead(target, seeded, { duration }) {
  await seedProducts(seeded.db, seeded.workspaceId, 1000);
  await settle(seeded.db);

  const barePort = await freePort();
  const bare = await startProcess(['bench/bare-server.mjs'], { PORT: String(barePort) }, 'ready');
  const baseline = await runAutocannon({ url: `http://127.0.0.1:${barePort}/`, connections: 50, duration });
  await bare.stop();

  // PGlite has one writer: the service opens the folder only after this process lets go of it.
  if (target.engine === 'pglite') await seeded.db.close();
  const service = await startService(target, { SVC_WORKERS: '0' });
  await runAutocannon({ url: `${service.url}/v1/products?limit=20`, connections: 10, duration: 1, headers: { authorization: `Bearer ${seeded.apiKey}` } });
  const result = await runAutocannon({
    url: `${service.url}/v1/products?limit=20`,
    connections: 50,
    duration,
    headers: { authorization: `Bearer ${seeded.apiKey}` },
  });
  const bodyBytes = (await (await fetch(`${service.url}/v1/products?limit=20`, { headers: { authorization: `Bearer ${seeded.apiKey}` } })).arrayBuffer()).byteLength;
  const rss = service.peakRssMb();
  await service.stop();
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`api read: ${result.non2xx} non-2xx, ${result.errors} errors`);

  // Context for the ratio: a hello-world answers 17 bytes, a page of 20 products several KB, and
  // moving those bytes costs even a server that does nothing else.
  const samePort = await freePort();
  const same = await startProcess(['bench/bare-server.mjs'], { PORT: String(samePort), BODY_BYTES: String(bodyBytes) }, 'ready');
  const sameSize = await runAutocannon({ url: `http://127.0.0.1:${samePort}/`, connections: 50, duration });
  await same.stop();
  return {
    name: 'API read (GET /v1/products?limit=20, 50 connections)',
    value: round(result.requests.average, 0),
    unit: 'req/s',
    p99Ms: result.latency.p99,
    baseline: round(baseline.requests.average, 0),
    baselineName: 'bare Fastify hello-world',
    baselineP99Ms: baseline.latency.p99,
    ratio: round(result.requests.average / baseline.requests.average, 3),
    extra: `bare Fastify answering the same ${bodyBytes}-byte body: ${round(sameSize.requests.average, 0)} req/s, ratio ${round(result.requests.average / sameSize.requests.average, 3)}`,
    target: 'ratio >= 0.40',
    pass: result.requests.average / baseline.requests.average >= 0.4,
    peakRssMb: rss,
  };
}
