// Scenario 4: at a steady rate of product changes, the time from the change to its arrival at the receiver.
import { SecretBox } from '../dist/lib/secretbox.js';
import { createEndpoint } from '../dist/webhooks/endpoints/store.js';
import { runAutocannon, sleep, startReceiver } from './lib.mjs';
import { MASTER_KEY, startService } from './service.mjs';

export async function latency(target, seeded, { duration }) {
  const rate = 500;
  const receiver = await startReceiver();
  const box = new SecretBox(Buffer.from(MASTER_KEY, 'hex'));
  await createEndpoint(seeded.db, box, { workspaceId: seeded.workspaceId, url: receiver.url, subscribedEvents: ['product.created'] }, new Date());
  const service = await startService(target);
  const result = await runAutocannon({
    url: `${service.url}/v1/products`,
    method: 'POST',
    connections: 20,
    overallRate: rate,
    duration,
    headers: { authorization: `Bearer ${seeded.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Latency probe' }),
  });
  await sleep(1000);
  const stats = await receiver.stats();
  const rss = service.peakRssMb();
  await service.stop();
  await receiver.stop();
  if (result.non2xx > 0) throw new Error(`latency: ${result.non2xx} non-2xx answers`);
  return {
    name: `Latency, change to arrival at ${rate} events/s (${stats.samples} samples)`,
    value: stats.p99,
    unit: 'ms p99',
    extra: `p50 ${stats.p50} ms, p95 ${stats.p95} ms, max ${stats.max} ms; achieved ${Math.round(result.requests.average)} events/s`,
    target: 'p99 <= 25 ms',
    pass: stats.p99 !== null && stats.p99 <= 25,
    peakRssMb: rss,
  };
}
