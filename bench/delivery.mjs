// Scenario 3: draining N pending deliveries to a local receiver, every outcome durably recorded,
// against a raw undici Pool posting the same signed bodies to the same receiver at the same concurrency.
import { Pool } from 'undici';
import { SecretBox } from '../dist/lib/secretbox.js';
import { createEndpoint } from '../dist/webhooks/endpoints/store.js';
import { sign } from '../dist/webhooks/sign.js';
import { cpuSeconds, round, sleep, startReceiver } from './lib.mjs';
import { MASTER_KEY, settle, startService } from './service.mjs';

const CONCURRENCY = 64;

async function seedDeliveries(db, workspaceId, endpointId, count) {
  await db.query(
    `INSERT INTO events (id, workspace_id, type, subject_type, subject_id, body, created_at)
     SELECT 'evt_' || lpad(to_hex(g), 26, '0'), $1, 'product.created', 'product', 'prd_' || lpad(to_hex(g), 26, '0'),
            '{"id":"evt_' || lpad(to_hex(g), 26, '0') || '","type":"product.created","created":"2026-01-01T00:00:00.000Z","subject":{"id":"prd_' || lpad(to_hex(g), 26, '0') || '","type":"product","url":"/v1/products/prd_' || lpad(to_hex(g), 26, '0') || '"}}',
            now()
       FROM generate_series(1, $2) AS g`,
    [workspaceId, count],
  );
  await db.query(
    `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, attempt, next_attempt_at, created_at)
     SELECT 'whd_' || lpad(to_hex(g), 26, '0'), $1, $2, 'evt_' || lpad(to_hex(g), 26, '0'), 'product.created', 'pending', 0, now(), now()
       FROM generate_series(1, $3) AS g`,
    [workspaceId, endpointId, count],
  );
  return db.query('SELECT d.id, e.body FROM webhook_deliveries d JOIN events e ON e.id = d.event_id');
}

/** The ceiling: the same signed requests through one undici Pool, CONCURRENCY in flight. */
async function rawUndici(url, secret, rows) {
  const target = new URL(url);
  const pool = new Pool(target.origin, { connections: CONCURRENCY, pipelining: 1 });
  let next = 0;
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < rows.length) {
        const row = rows[next++];
        const timestamp = Math.floor(Date.now() / 1000);
        const res = await pool.request({
          path: target.pathname,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'webhook-id': row.id, 'webhook-timestamp': String(timestamp), 'webhook-signature': sign([secret], row.id, timestamp, row.body) },
          body: row.body,
        });
        await res.body.dump();
        if (res.statusCode >= 300) throw new Error(`receiver answered ${res.statusCode}`);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  await pool.close();
  return { rate: rows.length / seconds, cpuPerRequestUs: (cpu.user + cpu.system) / rows.length };
}

async function pendingLeft(service, apiKey) {
  const res = await fetch(`${service.url}/v1/webhooks/deliveries?status=pending&limit=1`, { headers: { authorization: `Bearer ${apiKey}` } });
  if (!res.ok) throw new Error(`deliveries list answered ${res.status}`);
  return (await res.json()).data.length;
}

export async function delivery(target, seeded, { deliveries: count }) {
  const receiver = await startReceiver();
  const box = new SecretBox(Buffer.from(MASTER_KEY, 'hex'));
  const { row: endpoint, secret } = await createEndpoint(seeded.db, box, { workspaceId: seeded.workspaceId, url: receiver.url, subscribedEvents: ['product.*'] }, new Date());
  const rows = await seedDeliveries(seeded.db, seeded.workspaceId, endpoint.id, count);
  await settle(seeded.db);

  const { rate: ceiling, cpuPerRequestUs } = await rawUndici(receiver.url, secret, rows);
  await receiver.reset();

  // PGlite has one writer: the service opens the folder only after this process lets go of it.
  if (target.engine === 'pglite') await seeded.db.close();
  const service = await startService(target, { SVC_WORKER_CONCURRENCY: String(CONCURRENCY) });
  const cpuAtStart = cpuSeconds(service.child.pid);
  while ((await pendingLeft(service, seeded.apiKey)) > 0) await sleep(100);
  const serviceCpuUs = ((cpuSeconds(service.child.pid) - cpuAtStart) * 1e6) / count;
  // From the first arrival to the moment no row is pending: every outcome is recorded by then.
  const { count: received, first } = await receiver.stats();
  const seconds = (Date.now() - first) / 1000;
  const rss = service.peakRssMb();
  await service.stop();
  await receiver.stop();
  if (received < count) throw new Error(`receiver saw ${received} of ${count} deliveries`);
  const rate = count / seconds;
  return {
    name: `Delivery throughput (${count.toLocaleString('en')} pending deliveries, concurrency ${CONCURRENCY})`,
    value: round(rate, 0),
    unit: 'deliveries/s',
    baseline: round(ceiling, 0),
    baselineName: 'raw undici Pool, same signed bodies',
    extra: `service CPU ${round(serviceCpuUs, 0)} µs per delivery, raw client ${round(cpuPerRequestUs, 0)} µs per request`,
    ratio: round(rate / ceiling, 3),
    target: target.engine === 'postgres' ? 'ratio >= 0.40' : '(informative)',
    pass: target.engine === 'postgres' ? rate / ceiling >= 0.4 : true,
    peakRssMb: rss,
  };
}
