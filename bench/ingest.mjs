// Scenario 2: POST /v1/products with 3 subscribed endpoints: events and delivery rows committed per second.
import { availableParallelism } from 'node:os';
import { SecretBox } from '../dist/lib/secretbox.js';
import { createEndpoint } from '../dist/webhooks/endpoints/store.js';
import { cpuSeconds, idleSeconds, postgresCpuSeconds, round, runAutocannonOk } from './lib.mjs';
import { MASTER_KEY, startService } from './service.mjs';

export async function ingest(target, seeded, { duration }) {
  const box = new SecretBox(Buffer.from(MASTER_KEY, 'hex'));
  for (let i = 0; i < 3; i++) {
    await createEndpoint(seeded.db, box, { workspaceId: seeded.workspaceId, url: `https://receiver-${i}.example.com/hook`, subscribedEvents: ['product.*'] }, new Date());
  }
  // Workers off: this measures what the API commits, not what is sent.
  const service = await startService(target, { SVC_WORKERS: '0' });
  const load = (seconds) =>
    runAutocannonOk({
      url: `${service.url}/v1/products`,
      method: 'POST',
      connections: 50,
      duration: seconds,
      headers: { authorization: `Bearer ${seeded.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Bench product', price: { amount: 1999, currency: 'USD' }, metadata: { source: 'bench' } }),
    });
  const counts = async () => {
    const [{ events }] = await seeded.db.query('SELECT count(*)::int AS events FROM events WHERE workspace_id = $1', [seeded.workspaceId]);
    const [{ deliveries }] = await seeded.db.query('SELECT count(*)::int AS deliveries FROM webhook_deliveries WHERE workspace_id = $1', [seeded.workspaceId]);
    return { events, deliveries };
  };
  // Like every scenario, measured warm: two seconds of the same load first, not counted.
  await load(2);
  const before = await counts();
  const cpu = () => ({ service: cpuSeconds(service.child.pid), postgres: postgresCpuSeconds(), idle: idleSeconds() });
  const wal = async () => BigInt((await seeded.db.query("SELECT (pg_current_wal_lsn() - '0/0')::text AS at"))[0].at);
  const cpuBefore = cpu();
  const walBefore = await wal();
  const result = await load(duration);
  const walAfter = await wal();
  const cpuAfter = cpu();
  const rss = service.peakRssMb();
  await service.stop();
  const after = await counts();
  const events = after.events - before.events;
  const deliveries = after.deliveries - before.deliveries;
  const seconds = result.duration;
  const perEvent = (side) => round(((cpuAfter[side] - cpuBefore[side]) * 1e6) / events, 0);
  const idle = (cpuAfter.idle - cpuBefore.idle) / (seconds * availableParallelism());
  return {
    name: 'Ingest (POST /v1/products, 3 subscribed endpoints, 50 connections)',
    value: round(events / seconds, 0),
    unit: 'events/s',
    p99Ms: result.latency.p99,
    extra: `${round(deliveries / seconds, 0)} delivery rows/s; CPU per event: service ${perEvent('service')} µs, PostgreSQL ${perEvent('postgres')} µs; WAL ${round(Number(walAfter - walBefore) / events, 0)} bytes per event; cores idle ${round(100 * idle, 0)}% of the time`,
    target: '>= 3000 events/s',
    pass: events / seconds >= 3000,
    peakRssMb: rss,
  };
}
