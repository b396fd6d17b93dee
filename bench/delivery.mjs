// Scenario 3: draining N pending deliveries to a local receiver, every outcome durably recorded,
// against a raw undici Pool posting the same signed bodies to the same receiver at the same concurrency,
// and (on PostgreSQL) against the pipeline a Node.js team would otherwise build: BullMQ on Redis, with
// its outcomes in PostgreSQL (bullmq-peer.mjs).
import { idTimePrefix } from '../dist/lib/ids.js';
import { availableParallelism } from 'node:os';
import { Pool } from 'undici';
import { SecretBox } from '../dist/lib/secretbox.js';
import { createEndpoint } from '../dist/webhooks/endpoints/store.js';
import { sign } from '../dist/engine/delivery/sign.js';
import { channelSql } from '../dist/db/channels.js';
import { DELIVERY_CHANNEL } from '../dist/engine/delivery/handoff.js';
import { peerResult, startPeer } from './bullmq-peer.mjs';
import { cpuSeconds, idleSeconds, median, postgresCpuSeconds, ratiosByRound, redisCpuSeconds, round, sleep, startReceiver } from './lib.mjs';
import { MASTER_KEY, settle, startService } from './service.mjs';

/** Seeded ids in the service's own time-ordered shape, which retention and id ranges rely on. */
const EVT_IDS = idTimePrefix('evt', new Date());
const PRD_IDS = idTimePrefix('prd', new Date());
const WHD_IDS = idTimePrefix('whd', new Date());

const CONCURRENCY = 64;
/** Deliveries the service makes before it is measured, as many as the raw client's warm-up requests. */
const WARM_UP = 5_000;

/**
 * The service stores times to the millisecond, and an outcome is written only while its row still
 * holds the due time it was taken with (a Date, milliseconds): a due time seeded with now()'s
 * microseconds matched no outcome, so every row was sent again and again and a drain never ended.
 */
const NOW = `date_trunc('milliseconds', now())`;

/**
 * `count` pending deliveries (and their events), numbered from `from` so that rounds do not collide.
 * With `ordered`, each is written as the fan-out writes it for an endpoint with ordering "subject":
 * its event's subject as ordering key (one delivery per subject) and its place from the sequence.
 */
export async function seedDeliveries(db, workspaceId, endpointId, from, count, ordered = false) {
  await db.query(
    `INSERT INTO events (id, workspace_id, type, subject_type, subject_id, body, created_at)
     SELECT '${EVT_IDS}' || lpad(to_hex(g), 16, '0'), $1, 'product.created', 'product', '${PRD_IDS}' || lpad(to_hex(g), 16, '0'),
            '{"id":"${EVT_IDS}' || lpad(to_hex(g), 16, '0') || '","type":"product.created","created":"2026-01-01T00:00:00.000Z","subject":{"id":"${PRD_IDS}' || lpad(to_hex(g), 16, '0') || '","type":"product","url":"/v1/products/${PRD_IDS}' || lpad(to_hex(g), 16, '0') || '"}}',
            date_trunc('milliseconds', now())
       FROM generate_series($2::int, $3::int) AS g`,
    [workspaceId, from, from + count - 1],
  );
  await db.query(
    `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, attempt, next_attempt_at, created_at, ordering_key, ordering_seq)
     SELECT '${WHD_IDS}' || lpad(to_hex(g), 16, '0'), $1, $2, '${EVT_IDS}' || lpad(to_hex(g), 16, '0'), 'product.created', 'pending', 0, ${NOW}, ${NOW},
            ${ordered ? `'${PRD_IDS}' || lpad(to_hex(g), 16, '0'), nextval('webhook_deliveries_ordering_seq')` : 'NULL, NULL'}
       FROM generate_series($3::int, $4::int) AS g`,
    [workspaceId, endpointId, from, from + count - 1],
  );
  return db.query(`SELECT d.id, e.body FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE d.status = 'pending'`);
}

/** The ceiling: the same signed requests through one undici Pool, CONCURRENCY in flight. */
export async function rawUndici(url, secret, rows) {
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

/** The raw client's run, with the receiver's CPU per request and the share of the machine left idle. */
async function machineOf(receiver, count, run) {
  const receiverAtStart = cpuSeconds(receiver.child.pid);
  const idleAtStart = idleSeconds();
  const startedAt = Date.now();
  const result = await run();
  const idle = (idleSeconds() - idleAtStart) / (((Date.now() - startedAt) / 1000) * availableParallelism());
  return { ...result, receiverCpuUs: ((cpuSeconds(receiver.child.pid) - receiverAtStart) * 1e6) / count, idle };
}

const us = (runs, key) => `${round(median(runs.map((r) => r[key])), 0)} µs`;
const pct = (runs, key) => `${round(100 * median(runs.map((r) => r[key])), 0)}%`;

/**
 * The service (or the peer's worker) draining `count` due rows: `wake` sets it going, `pending` says
 * whether a row is left. Timed from the first arrival to the moment no row is pending: every outcome
 * is recorded by then.
 */
async function drain(service, receiver, count, wake, pending) {
  await receiver.reset();
  const cpuAtStart = cpuSeconds(service.child.pid);
  const postgresAtStart = postgresCpuSeconds();
  const redisAtStart = redisCpuSeconds();
  const idleAtStart = idleSeconds();
  const receiverAtStart = cpuSeconds(receiver.child.pid);
  const startedAt = Date.now();
  await wake();
  // Arrivals are counted by the receiver (cheap); the database is asked only once all have arrived,
  // or every 2 s in case some never will.
  for (let polls = 1; ; polls++) {
    const arrived = (await receiver.count()).count;
    if ((arrived >= count || polls % 20 === 0) && !(await pending())) break;
    await sleep(arrived >= count ? 20 : 100);
  }
  const ended = Date.now();
  const serviceCpuUs = ((cpuSeconds(service.child.pid) - cpuAtStart) * 1e6) / count;
  const postgresCpuUs = ((postgresCpuSeconds() - postgresAtStart) * 1e6) / count;
  const redisCpuUs = ((redisCpuSeconds() - redisAtStart) * 1e6) / count;
  const receiverCpuUs = ((cpuSeconds(receiver.child.pid) - receiverAtStart) * 1e6) / count;
  const idle = (idleSeconds() - idleAtStart) / (((ended - startedAt) / 1000) * availableParallelism());
  const { count: received, first } = await receiver.count();
  await receiver.reset();
  if (received < count) throw new Error(`receiver saw ${received} of ${count} deliveries`);
  return { rate: count / ((ended - first) / 1000), serviceCpuUs, postgresCpuUs, redisCpuUs, receiverCpuUs, idle };
}

/**
 * PostgreSQL: one service for every round, warmed up first on WARM_UP deliveries as the raw client
 * is, so both sides are measured in their steady state. It polls only hourly, so the rows seeded
 * for a round wait until the raw client is done and a NOTIFY (what a commit's fan-out sends) wakes it.
 * Then the BullMQ peer, also one process for every round and warmed up on the same rows, delivers the
 * round's rows again: enqueued beforehand in a paused queue, which resuming sets going.
 */
/** BENCH_PEER=0 leaves the peer out: the service and the raw client alone, as before the peer was added. */
const WITH_PEER = process.env.BENCH_PEER !== '0';

async function rounded(target, seeded, receiver, endpoint, secret, count, rounds) {
  const service = await startService(target, { SVC_WORKER_CONCURRENCY: String(CONCURRENCY), SVC_POLL_INTERVAL: '1h' });
  const wake = () => seeded.db.query(`SELECT pg_notify(${channelSql(DELIVERY_CHANNEL)}, 'bench')`);
  const pending = async () => (await seeded.db.query(`SELECT 1 FROM webhook_deliveries WHERE status = 'pending' LIMIT 1`)).length > 0;
  const runs = [];
  let peer;
  try {
    if (WITH_PEER) peer = await startPeer(seeded.db, { databaseUrl: target.url, receiverUrl: receiver.url, secret, concurrency: CONCURRENCY });
    const warmRows = await seedDeliveries(seeded.db, seeded.workspaceId, endpoint.id, rounds * count + 1, WARM_UP);
    const cold = await drain(service, receiver, WARM_UP, wake, pending);
    let peerCold = null;
    if (peer) {
      await peer.load(warmRows);
      peerCold = await drain(peer, receiver, WARM_UP, peer.wake, peer.pending);
    }
    for (let i = 0; i < rounds; i++) {
      // Every round starts from the same state: the earlier deliveries gone, the new rows'
      // statistics taken (as autovacuum would), then a checkpoint.
      await seeded.db.query('TRUNCATE webhook_deliveries');
      const rows = await seedDeliveries(seeded.db, seeded.workspaceId, endpoint.id, i * count + 1, count);
      await seeded.db.query('ANALYZE webhook_deliveries, events');
      await settle(seeded.db);
      const raw = await machineOf(receiver, rows.length, () => rawUndici(receiver.url, secret, rows));
      const { rate: ceiling, cpuPerRequestUs, receiverCpuUs: rawReceiverCpuUs, idle: rawIdle } = raw;
      const { rate, serviceCpuUs, postgresCpuUs, receiverCpuUs, idle } = await drain(service, receiver, count, wake, pending);
      let bullmq = null;
      if (peer) {
        await peer.load(rows);
        await settle(seeded.db);
        bullmq = await drain(peer, receiver, count, peer.wake, peer.pending);
      }
      runs.push({ rate, ceiling, ratio: rate / ceiling, serviceCpuUs, postgresCpuUs, receiverCpuUs, idle, cpuPerRequestUs, rawReceiverCpuUs, rawIdle, peer: bullmq, peerRatio: bullmq ? rate / bullmq.rate : null });
    }
    return { runs, cold, peerCold, rss: service.peakRssMb(), peerRss: peer ? peer.peakRssMb() : null };
  } finally {
    await service.stop();
    await peer?.stop();
  }
}

/**
 * The full run measures in rounds (raw ceiling, then the service, then again, each round on freshly
 * seeded rows), so a slow stretch of a shared machine hits both sides; the ratio is the median of
 * the rounds' ratios.
 */
export async function delivery(target, seeded, { deliveries: count, rounds }) {
  const receiver = await startReceiver();
  const box = new SecretBox(Buffer.from(MASTER_KEY, 'hex'));
  const { row: endpoint, secret } = await createEndpoint(seeded.db, box, { workspaceId: seeded.workspaceId, url: receiver.url, subscribedEvents: ['product.*'] }, new Date());
  // The raw client and the receiver warm up first (their processes live through every round), so
  // the first round's ceiling is not a cold one; the service warms up likewise (postgresRounds).
  const warmUp = Array.from({ length: WARM_UP }, (_, i) => ({ id: `whd_warmup${i}`, body: JSON.stringify({ id: `evt_warmup${i}`, type: 'ping' }) }));
  await rawUndici(receiver.url, secret, warmUp);
  await receiver.reset();
  const { runs, cold, peerCold, rss, peerRss } = await rounded(target, seeded, receiver, endpoint, secret, count, rounds);
  await receiver.stop();
  const ratio = median(runs.map((r) => r.ratio));
  const byRound = ratiosByRound(runs);
  return {
    name: `Delivery throughput (${count.toLocaleString('en')} pending deliveries, concurrency ${CONCURRENCY})`,
    value: round(median(runs.map((r) => r.rate)), 0),
    unit: 'deliveries/s',
    baseline: round(median(runs.map((r) => r.ceiling)), 0),
    baselineName: 'raw undici Pool, same signed bodies',
    extra: [
      `CPU per delivery: service ${us(runs, 'serviceCpuUs')}, PostgreSQL ${us(runs, 'postgresCpuUs')}, receiver ${us(runs, 'receiverCpuUs')}; cores idle ${pct(runs, 'idle')} of the time (raw client ${us(runs, 'cpuPerRequestUs')} and receiver ${us(runs, 'rawReceiverCpuUs')} per request, cores idle ${pct(runs, 'rawIdle')})`,
      `its first ${WARM_UP.toLocaleString('en')} after start (warm-up, not counted): ${round(cold.rate, 0)}/s at ${round(cold.serviceCpuUs, 0)} µs`,
      byRound,
    ]
      .filter(Boolean)
      .join('; '),
    ratio: round(ratio, 3),
    target: 'ratio >= 0.40',
    pass: ratio >= 0.4,
    peakRssMb: rss,
    rounds: runs.map((r) => ({ rate: round(r.rate, 0), ceiling: round(r.ceiling, 0), ratio: round(r.ratio, 3), peer: round(r.peer?.rate, 0), peerRatio: round(r.peerRatio, 3) })),
    peer: runs[0].peer ? peerResult(runs, { cold: peerCold, rss: peerRss, count, concurrency: CONCURRENCY, warmUp: WARM_UP }) : undefined,
  };
}

/**
 * What ordering by subject costs: the delivery scenario's drain for an endpoint with ordering
 * "subject" (one delivery per subject, so nothing waits and only the claim's check is measured),
 * beside the same drain for an endpoint without ordering, in the same service, alternating within
 * each round. The ratio is ordered / unordered; 1 means ordering costs nothing.
 */
export async function orderedDelivery(target, seeded, { deliveries: count, rounds }) {
  const receiver = await startReceiver();
  const box = new SecretBox(Buffer.from(MASTER_KEY, 'hex'));
  const endpoint = async (ordering) =>
    (await createEndpoint(seeded.db, box, { workspaceId: seeded.workspaceId, url: receiver.url, subscribedEvents: ['product.*'], ordering }, new Date())).row;
  const unordered = await endpoint('none');
  const ordered = await endpoint('subject');
  const runs = [];
  let rss = 0;
  const service = await startService(target, { SVC_WORKER_CONCURRENCY: String(CONCURRENCY), SVC_POLL_INTERVAL: '1h' });
  const wake = () => seeded.db.query(`SELECT pg_notify(${channelSql(DELIVERY_CHANNEL)}, 'bench')`);
  const pending = async () => (await seeded.db.query(`SELECT 1 FROM webhook_deliveries WHERE status = 'pending' LIMIT 1`)).length > 0;
  const measure = async (ep, from, isOrdered) => {
    await seeded.db.query('TRUNCATE webhook_deliveries');
    await seedDeliveries(seeded.db, seeded.workspaceId, ep.id, from, count, isOrdered);
    await seeded.db.query('ANALYZE webhook_deliveries, events');
    await settle(seeded.db);
    return drain(service, receiver, count, wake, pending);
  };
  try {
    await seedDeliveries(seeded.db, seeded.workspaceId, unordered.id, 2 * rounds * count + 1, WARM_UP);
    await drain(service, receiver, WARM_UP, wake, pending);
    for (let i = 0; i < rounds; i++) {
      const plain = await measure(unordered, 2 * i * count + 1, false);
      const inOrder = await measure(ordered, (2 * i + 1) * count + 1, true);
      runs.push({ plain, inOrder, ratio: inOrder.rate / plain.rate });
    }
  } finally {
    rss = service.peakRssMb();
    await service.stop();
  }
  await receiver.stop();
  const ratio = median(runs.map((r) => r.ratio));
  const cpu = (side) => round(median(runs.map((r) => r[side].serviceCpuUs)), 0);
  const pg = (side) => `, PostgreSQL ${round(median(runs.map((r) => r[side].postgresCpuUs)), 0)} µs`;
  return {
    name: `Delivery throughput with ordering "subject" (${count.toLocaleString('en')} pending deliveries, one per subject, concurrency ${CONCURRENCY})`,
    value: round(median(runs.map((r) => r.inOrder.rate)), 0),
    unit: 'deliveries/s',
    baseline: round(median(runs.map((r) => r.plain.rate)), 0),
    baselineName: 'the same drain, ordering "none"',
    extra: [
      `CPU per delivery: ordered service ${cpu('inOrder')} µs${pg('inOrder')}; unordered service ${cpu('plain')} µs${pg('plain')}`,
      runs.length > 1 ? `ratios by round ${runs.map((r) => round(r.ratio, 3)).join(', ')}` : '',
    ]
      .filter(Boolean)
      .join('; '),
    ratio: round(ratio, 3),
    target: '(informative)',
    pass: true,
    peakRssMb: rss,
    rounds: runs.map((r) => ({ rate: round(r.inOrder.rate, 0), ceiling: round(r.plain.rate, 0), ratio: round(r.ratio, 3) })),
  };
}
