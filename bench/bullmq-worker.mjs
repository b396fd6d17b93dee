// The delivery pipeline a Node.js team would otherwise build, in its own process: a BullMQ Worker
// taking jobs from Redis, posting each job's body with Standard Webhooks headers through an undici
// Pool (keep-alive), and writing the outcome to its own PostgreSQL table with one UPDATE per job.
// Started by bench/bullmq-peer.mjs; prints "ready" once it waits for jobs.
//
// Environment: REDIS_URL, DATABASE_URL (search_path in its options), QUEUE, PREFIX, RECEIVER_URL,
// SECRET (the endpoint's signing secret), CONCURRENCY, ATTEMPTS (as the producer sets them: the last
// failure is final).
import { Worker } from 'bullmq';
import postgres from 'postgres';
import { Pool } from 'undici';
import { sign } from '../dist/engine/delivery/sign.js';

const concurrency = Number(process.env.CONCURRENCY);
const target = new URL(process.env.RECEIVER_URL);
const secret = process.env.SECRET;
const http = new Pool(target.origin, { connections: concurrency, pipelining: 1 });
// postgres.js's default pool size, as the service's.
const db = postgres(process.env.DATABASE_URL, { max: 10 });

/** One outcome per attempt; a prepared statement, so PostgreSQL parses and plans it once per connection. */
function record(id, status, attempt, responseStatus, durationMs) {
  return db`UPDATE peer_deliveries SET status = ${status}, attempt = ${attempt}, response_status = ${responseStatus}, duration_ms = ${durationMs}, attempted_at = now() WHERE id = ${id}`;
}

async function deliver(job) {
  const { id, body } = job.data;
  const attempt = job.attemptsMade + 1;
  const failed = attempt >= Number(process.env.ATTEMPTS) ? 'failed' : 'retrying';
  const timestamp = Math.floor(Date.now() / 1000);
  const started = performance.now();
  let statusCode;
  try {
    const res = await http.request({
      path: target.pathname,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': sign([secret], id, timestamp, body) },
      body,
    });
    await res.body.dump();
    statusCode = res.statusCode;
  } catch (error) {
    await record(id, failed, attempt, null, Math.round(performance.now() - started));
    throw error;
  }
  const ok = statusCode >= 200 && statusCode < 300;
  await record(id, ok ? 'delivered' : failed, attempt, statusCode, Math.round(performance.now() - started));
  // BullMQ retries a job whose processor throws, with the producer's backoff.
  if (!ok) throw new Error(`receiver answered ${statusCode}`);
}

const redisUrl = new URL(process.env.REDIS_URL);
const worker = new Worker(process.env.QUEUE, deliver, {
  connection: { host: redisUrl.hostname, port: Number(redisUrl.port || 6379), maxRetriesPerRequest: null },
  prefix: process.env.PREFIX,
  concurrency,
});
worker.on('error', (error) => process.stderr.write(`worker: ${error.message}\n`));
await worker.waitUntilReady();
process.stdout.write('ready\n');
