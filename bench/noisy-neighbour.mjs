// Scenario: a healthy endpoint at 100 events/s beside endpoints whose receivers never answer, each
// with a backlog of a thousand deliveries (and one more with every event): the healthy endpoint's
// change-to-arrival, with 0, 1 and 10 such neighbours, each phase on a freshly started service
// (PostgreSQL), counted from the first request after its start (the first seconds are also shown apart).
import { SecretBox } from '../dist/lib/secretbox.js';
import { createEndpoint } from '../dist/webhooks/endpoints/store.js';
import { round, seedBacklog, sleep, startReceiver, steadyLoad } from './lib.mjs';
import { MASTER_KEY, settle, startService } from './service.mjs';

const RATE = 100;
const BACKLOG = 1_000;
/** The first seconds after start, shown apart (they count in the target all the same). */
const FIRST_SECONDS = 5;

/** One phase: `hanging` silent endpoints with their backlogs, the service started, warmed up, measured. */
async function phase(target, seeded, healthy, silent, hanging, duration) {
  const box = new SecretBox(Buffer.from(MASTER_KEY, 'hex'));
  const now = new Date();
  // The earlier phase's endpoints and deliveries are gone.
  await seeded.db.query('TRUNCATE webhook_deliveries');
  await seeded.db.query('UPDATE webhook_endpoints SET active = false, deleted_at = $1 WHERE deleted_at IS NULL', [now]);
  const input = (url) => ({ workspaceId: seeded.workspaceId, url, subscribedEvents: ['product.created'] });
  await createEndpoint(seeded.db, box, input(healthy.url), now);
  const silentIds = [];
  for (let i = 0; i < hanging; i++) silentIds.push((await createEndpoint(seeded.db, box, input(`${silent.base}/hang/${i}`), now)).row.id);
  if (hanging > 0) await seedBacklog(seeded.db, seeded.workspaceId, silentIds, BACKLOG, `nn${hanging}x`);
  await settle(seeded.db);

  const service = await startService(target);
  try {
    await healthy.reset();
    const seconds = Math.max(duration, 10);
    const loading = steadyLoad(service.url, seeded.apiKey, RATE, seconds);
    await sleep(FIRST_SECONDS * 1000);
    const first = await healthy.stats();
    const load = await loading;
    await sleep(1000);
    const stats = await healthy.stats();
    if (load.failed > 0) throw new Error(`noisy neighbour: ${load.failed} requests failed`);
    return { hanging, p50: stats.p50, p99: stats.p99, max: stats.max, samples: stats.samples, expected: Math.round(RATE * seconds), firstP99: first.p99, rss: service.peakRssMb() };
  } finally {
    await service.stop();
  }
}

export async function noisyNeighbour(target, seeded, { duration }) {
  const healthy = await startReceiver('ok');
  const silent = await startReceiver('hang');
  const phases = [];
  try {
    for (const hanging of [0, 1, 10]) phases.push(await phase(target, seeded, healthy, silent, hanging, duration));
  } finally {
    await silent.stop();
    await healthy.stop();
  }
  const worst = phases.at(-1);
  const describe = (p) => `${p.hanging} hanging: p50 ${p.p50} ms, p99 ${p.p99} ms, max ${p.max} ms, ${p.samples}/${p.expected} arrived (first ${FIRST_SECONDS} s: p99 ${p.firstP99} ms)`;
  return {
    name: `Noisy neighbour: healthy endpoint at ${RATE} events/s beside endpoints that never answer (backlog ${BACKLOG.toLocaleString('en')} each), counted from the start`,
    value: worst.p99,
    unit: `ms p99 with ${worst.hanging} hanging`,
    p99Ms: worst.p99,
    baseline: phases[0].p99,
    baselineName: 'p99 ms with none hanging',
    extra: phases.map(describe).join('; '),
    ratio: phases[0].p99 ? round(worst.p99 / phases[0].p99, 2) : null,
    target: 'p99 <= 50 ms with 10 hanging',
    pass: worst.p99 !== null && worst.p99 <= 50 && worst.samples === worst.expected,
    peakRssMb: Math.max(...phases.map((p) => p.rss ?? 0)),
  };
}
