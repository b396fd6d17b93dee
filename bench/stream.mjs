// Scenario: 100 readers of GET /v1/events/stream while products are created at a steady rate:
// the events per second the stream hands out, and the lag from an event's creation to its arrival.
import { request } from 'node:http';
import { percentile, round, sleep, steadyLoad } from './lib.mjs';
import { startService } from './service.mjs';

const READERS = 100;

/**
 * A stream reader that notes, per event, the milliseconds from its `created` to its arrival, and
 * that time (`created`), so that a measurement counts only the events it made.
 */
function openReader(url, apiKey) {
  return new Promise((resolve, reject) => {
    const lags = [];
    const created = [];
    const ids = new Set();
    let duplicates = 0;
    const req = request(`${url}/v1/events/stream`, { headers: { authorization: `Bearer ${apiKey}`, accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
      let pending = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        const now = Date.now();
        pending += chunk;
        let cut;
        while ((cut = pending.indexOf('\n\n')) >= 0) {
          const block = pending.slice(0, cut);
          pending = pending.slice(cut + 2);
          const data = block.split('\n').find((line) => line.startsWith('data: '));
          if (!data) continue;
          const event = JSON.parse(data.slice(6));
          if (ids.has(event.id)) duplicates++;
          ids.add(event.id);
          created.push(Date.parse(event.created));
          lags.push(now - created[created.length - 1]);
        }
      });
      resolve({ lags, created, ids, duplicates: () => duplicates, close: () => req.destroy() });
    });
    req.on('error', () => {});
    req.end();
  });
}

async function measure(target, seeded, rate, seconds, settleMs) {
  const service = await startService(target, { SVC_WORKERS: '0', SVC_STREAM_SETTLE: `${settleMs}ms` });
  const readers = await Promise.all(Array.from({ length: READERS }, () => openReader(service.url, seeded.apiKey)));
  // Warm: a few seconds of the same load first, not counted.
  await steadyLoad(service.url, seeded.apiKey, rate, 2);
  await sleep(settleMs + 500);
  // Only events created from here on count: a warm-up event still arriving (a settle held it) is not one of them.
  const start = Date.now();
  const { failed, achieved } = await steadyLoad(service.url, seeded.apiKey, rate, seconds);
  const written = Math.round(rate * seconds);
  const measured = (r) => r.lags.filter((_, i) => r.created[i] >= start);
  // Until every reader has every event (or 30 s).
  const deadline = Date.now() + 30_000;
  while (readers.some((r) => measured(r).length < written) && Date.now() < deadline) await sleep(50);
  const rss = service.peakRssMb();
  for (const reader of readers) reader.close();
  await service.stop();
  const lags = readers.flatMap(measured).sort((a, b) => a - b);
  const complete = readers.filter((r) => measured(r).length === written).length;
  const duplicates = readers.reduce((sum, r) => sum + r.duplicates(), 0);
  return { failed, achieved, written, lags, complete, duplicates, received: lags.length, rss };
}

export async function stream(target, seeded, { duration }) {
  const rate = Number(process.env.BENCH_STREAM_RATE ?? 200);
  // One API process may run with SVC_STREAM_SETTLE=0; the default on PostgreSQL (1s) waits for other processes' writes.
  const single = await measure(target, seeded, rate, duration, 0);
  const shared = await measure(target, seeded, rate, duration, 1000);
  for (const run of [single, shared]) {
    if (run.failed > 0) throw new Error(`stream: ${run.failed} requests failed`);
  }
  const p = (run, q) => round(percentile(run.lags, q), 0);
  return {
    name: `Event stream, ${READERS} readers of one workspace, products created at ${rate}/s (SVC_STREAM_SETTLE=0)`,
    value: round(READERS * single.achieved * (single.received / (READERS * single.written)), 0),
    unit: 'events/s to readers',
    p99Ms: p(single, 99),
    extra:
      `lag from creation to arrival p50 ${p(single, 50)} ms, p99 ${p(single, 99)} ms, max ${p(single, 100)} ms; ${single.complete}/${READERS} readers got all ${single.written} events, ${single.duplicates} twice; ` +
      `with the default on PostgreSQL, SVC_STREAM_SETTLE=1s: lag p50 ${p(shared, 50)} ms, p99 ${p(shared, 99)} ms, ${shared.complete}/${READERS} complete`,
    target: 'every reader gets every event once',
    pass: single.complete === READERS && shared.complete === READERS && single.duplicates + shared.duplicates === 0,
    peakRssMb: Math.max(single.rss, shared.rss),
  };
}
