// Scenario 4: at a steady rate of product changes, the time from the change to its arrival at the receiver.
import { SecretBox } from '../dist/lib/secretbox.js';
import { createEndpoint } from '../dist/webhooks/endpoints/store.js';
import { sleep, startReceiver, steadyLoad } from './lib.mjs';
import { MASTER_KEY, startService } from './service.mjs';

const WARMUP_SECONDS = 5;

export async function latency(target, seeded, { duration }) {
  const rate = Number(process.env.BENCH_RATE ?? 500);
  const receiver = await startReceiver();
  const box = new SecretBox(Buffer.from(MASTER_KEY, 'hex'));
  await createEndpoint(seeded.db, box, { workspaceId: seeded.workspaceId, url: receiver.url, subscribedEvents: ['product.created'] }, new Date());
  const service = await startService(target);
  // Steady state: a freshly started service first compiles its hot paths and opens its database
  // and receiver connections, so the first seconds are run and reported apart, then measured anew.
  const warmup = await steadyLoad(service.url, seeded.apiKey, rate, WARMUP_SECONDS);
  await sleep(1000);
  const cold = await receiver.stats();
  await receiver.reset();
  const { failed, achieved } = await steadyLoad(service.url, seeded.apiKey, rate, duration);
  await sleep(1000);
  const stats = await receiver.stats();
  const rss = service.peakRssMb();
  await service.stop();
  await receiver.stop();
  if (failed + warmup.failed > 0) throw new Error(`latency: ${failed + warmup.failed} requests failed`);
  return {
    name: `Latency, change to arrival at ${rate} events/s (${stats.samples} samples)`,
    value: stats.p99,
    unit: 'ms p99',
    extra: `p50 ${stats.p50} ms, p95 ${stats.p95} ms, max ${stats.max} ms; achieved ${Math.round(achieved)} events/s, evenly spaced; first ${WARMUP_SECONDS} s after start, not counted: p99 ${cold.p99} ms`,
    target: 'p99 <= 25 ms',
    pass: stats.p99 !== null && stats.p99 <= 25,
    peakRssMb: rss,
  };
}
