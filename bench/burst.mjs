// Scenario: a burst after a quiet spell. The fleet of fleet.mjs (1,000 endpoints, 20-200 ms, 2%
// failing, 1% hanging); the service started and left idle for 10 s; then 20,000 deliveries, 20 to
// each endpoint, come due at once (one statement and a NOTIFY). Measured: how fast the healthy ones
// drain, from that statement to the last healthy success recorded, beside a raw undici Pool posting
// the same signed bodies to the same receivers in the same run.
import { createOrganization } from '../dist/account/admin.js';
import { channelSql } from '../dist/db/channels.js';
import { DELIVERY_CHANNEL } from '../dist/engine/delivery/handoff.js';
import { capacityWatch } from './capacity.mjs';
import { PER_WORKSPACE, WORKSPACES, rawFleet, seedFleet, seedSpread } from './fleet.mjs';
import { round, sleep, startReceiver } from './lib.mjs';
import { settle, startService } from './service.mjs';

const ROUNDS = 20;
const IDLE_SECONDS = 10;

export async function burst(target, seeded) {
  const receiver = await startReceiver('fleet');
  const org = await createOrganization(seeded.db, { slug: `burst-${Date.now()}`, name: 'Fleet' }, new Date());
  const workspaces = await seedFleet(seeded.db, org.id, receiver.base);
  const endpoints = new Map(workspaces.flatMap((w) => w.endpoints).map((e) => [e.id, e]));
  // Written a day ahead: nobody takes them until the burst.
  const rows = await seedSpread(seeded.db, workspaces, ROUNDS, new Date(Date.now() + 86_400_000));
  const healthyRows = rows.filter((r) => endpoints.get(r.endpoint_id).healthy).length;
  await seeded.db.query('ANALYZE webhook_deliveries, events');
  await settle(seeded.db);

  const raw = await rawFleet(receiver.base, endpoints, rows);
  await receiver.reset();

  const capacity = await capacityWatch();
  const service = await startService(target, { ...capacity.env });
  try {
    capacity.start();
    await sleep(IDLE_SECONDS * 1000);
    const started = performance.now();
    await seeded.db.query(`UPDATE webhook_deliveries SET next_attempt_at = date_trunc('milliseconds', now()) WHERE status = 'pending'`);
    await seeded.db.query(`SELECT pg_notify(${channelSql(DELIVERY_CHANNEL)}, 'bench')`);
    for (;;) {
      const [{ n }] = await seeded.db.query(
        `SELECT count(*)::int AS n FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
          WHERE d.status = 'success' AND e.url LIKE '%/ok/%'`,
      );
      if (n >= healthyRows) break;
      if (performance.now() - started > 600_000) throw new Error(`burst: ${n} of ${healthyRows} healthy deliveries after 10 minutes`);
      await sleep(50);
    }
    const seconds = (performance.now() - started) / 1000;
    const rate = healthyRows / seconds;
    const ratio = rate / raw.rate;
    return {
      name: `Burst after ${IDLE_SECONDS} s idle (${rows.length.toLocaleString('en')} deliveries at once to ${WORKSPACES * PER_WORKSPACE} endpoints, 20-200 ms, 2% failing, 1% hanging)`,
      value: round(rate, 0),
      unit: 'healthy deliveries/s',
      baseline: round(raw.rate, 0),
      baselineName: 'raw undici Pool, 512 connections, same signed bodies and time-out',
      extra: `${healthyRows.toLocaleString('en')} healthy deliveries in ${round(seconds, 1)} s; ${capacity.stop()}`,
      ratio: round(ratio, 2),
      target: '>= 0.5 of the raw pool',
      pass: ratio >= 0.5,
      peakRssMb: service.peakRssMb(),
    };
  } finally {
    capacity.stop();
    await service.stop();
    await receiver.stop();
  }
}
