// The delivery scenario's peer: what a Node.js team would otherwise build, BullMQ on Redis with one
// Worker process (bench/bullmq-worker.mjs) and a table of its own in PostgreSQL for the outcomes.
// This side is the producer: it writes each delivery's row, enqueues its job (addBulk) in a paused
// queue, and resumes the queue to start a drain. Every run has its own key prefix in Redis, removed
// when the peer stops.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { ROOT, median, ratiosByRound, round, startProcess } from './lib.mjs';

export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const BULLMQ_VERSION = JSON.parse(readFileSync(`${ROOT}node_modules/bullmq/package.json`, 'utf8')).version;

const QUEUE = 'deliveries';
/** Jobs added per addBulk call. */
const CHUNK = 1_000;
/** A team's usual job options: retries with backoff, completed jobs removed, some failures kept. */
const JOB_OPTIONS = { attempts: 5, backoff: { type: 'exponential', delay: 1_000 }, removeOnComplete: true, removeOnFail: 1_000 };

/** Every key under `prefix`, so nothing of the run stays in a Redis shared with other work. */
async function removeKeys(prefix) {
  const redis = new Redis(REDIS_URL);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1_000);
      if (keys.length) await redis.unlink(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/**
 * Creates the peer's table through `db` (the benchmark's schema) and starts its worker, connected to
 * the same schema by `databaseUrl`, with `concurrency` jobs at a time, posting to `receiverUrl`.
 */
export async function startPeer(db, { databaseUrl, receiverUrl, secret, concurrency }) {
  await db.query(
    `CREATE TABLE peer_deliveries (id text PRIMARY KEY, status text NOT NULL, attempt int NOT NULL DEFAULT 0,
                                   response_status int, duration_ms int, attempted_at timestamptz)`,
  );
  const prefix = `bench-peer-${randomBytes(4).toString('hex')}`;
  const { hostname, port } = new URL(REDIS_URL);
  const queue = new Queue(QUEUE, { connection: { host: hostname, port: Number(port || 6379) }, prefix });
  // An 'error' event without a listener would end the benchmark; the command that failed rejects anyway.
  queue.on('error', (error) => process.stderr.write(`peer queue: ${error.message}\n`));
  let worker;
  try {
    await queue.pause();
    worker = await startProcess(
      ['bench/bullmq-worker.mjs'],
      { REDIS_URL, DATABASE_URL: databaseUrl, QUEUE, PREFIX: prefix, RECEIVER_URL: receiverUrl, SECRET: secret, CONCURRENCY: String(concurrency), ATTEMPTS: String(JOB_OPTIONS.attempts) },
      'ready',
    );
  } catch (error) {
    await queue.close();
    await removeKeys(prefix);
    throw error;
  }
  return {
    child: worker.child,
    peakRssMb: worker.peakRssMb,
    /**
     * `rows` ({ id, body }) as pending rows of an emptied table with fresh statistics (as the
     * service's rounds have) and one job each, in the paused queue.
     */
    async load(rows) {
      await queue.pause();
      await db.query('TRUNCATE peer_deliveries');
      await db.query(`INSERT INTO peer_deliveries (id, status) SELECT unnest($1::text[]), 'pending'`, [rows.map((r) => r.id)]);
      await db.query('ANALYZE peer_deliveries');
      for (let i = 0; i < rows.length; i += CHUNK) {
        await queue.addBulk(rows.slice(i, i + CHUNK).map((r) => ({ name: 'deliver', data: { id: r.id, body: r.body }, opts: { ...JOB_OPTIONS, jobId: r.id } })));
      }
    },
    wake: () => queue.resume(),
    pending: async () => (await db.query(`SELECT 1 FROM peer_deliveries WHERE status IN ('pending', 'retrying') LIMIT 1`)).length > 0,
    async stop() {
      await worker.stop();
      await queue.obliterate({ force: true }).catch(() => {});
      await queue.close();
      await removeKeys(prefix);
    },
  };
}

/**
 * The service beside the peer, from the delivery scenario's rounds (each with the service's `rate`,
 * CPU and `peer`, the peer's drain): a row of its own in the results.
 */
export function peerResult(runs, { cold, rss, count, concurrency, warmUp }) {
  const us = (pick) => round(median(runs.map(pick)), 0);
  const ratio = median(runs.map((r) => r.peerRatio));
  return {
    name: `Delivery throughput against a BullMQ peer (the same ${count.toLocaleString('en')} deliveries; BullMQ ${BULLMQ_VERSION} on Redis, one Worker process of concurrency ${concurrency}, undici Pool, one UPDATE per outcome)`,
    value: round(median(runs.map((r) => r.rate)), 0),
    unit: 'deliveries/s',
    baseline: round(median(runs.map((r) => r.peer.rate)), 0),
    baselineName: 'BullMQ Worker, jobs enqueued beforehand',
    extra: [
      `CPU per delivery: peer process ${us((r) => r.peer.serviceCpuUs)} µs, Redis ${us((r) => r.peer.redisCpuUs)} µs, PostgreSQL ${us((r) => r.peer.postgresCpuUs)} µs (service ${us((r) => r.serviceCpuUs)} µs, PostgreSQL ${us((r) => r.postgresCpuUs)} µs); cores idle ${round(100 * median(runs.map((r) => r.peer.idle)), 0)}% of the time`,
      `peer peak RSS ${round(rss, 0)} MB; its first ${warmUp.toLocaleString('en')} after start (warm-up, not counted): ${round(cold.rate, 0)}/s at ${round(cold.serviceCpuUs, 0)} µs`,
      runs.length > 1 ? `peer rate by round ${runs.map((r) => round(r.peer.rate, 0)).join(', ')}` : '',
      ratiosByRound(runs.map((r) => ({ ratio: r.peerRatio }))),
    ]
      .filter(Boolean)
      .join('; '),
    ratio: round(ratio, 3),
    target: '(reported)',
    pass: true,
  };
}
