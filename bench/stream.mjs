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

/**
 * Readers on one service, products created at `rate` through another (`writer`), or through the
 * same one: every event must reach every reader once.
 */
async function measure(target, seeded, rate, seconds, { apart }) {
  const service = await startService(target, { SVC_WORKERS: '0' });
  const writer = apart ? await startService(target, { SVC_WORKERS: '0' }) : service;
  const readers = await Promise.all(Array.from({ length: READERS }, () => openReader(service.url, seeded.apiKey)));
  // Warm: a few seconds of the same load first, not counted.
  await steadyLoad(writer.url, seeded.apiKey, rate, 2);
  await sleep(500);
  // Only events created from here on count.
  const start = Date.now();
  const { failed, achieved } = await steadyLoad(writer.url, seeded.apiKey, rate, seconds);
  const written = Math.round(rate * seconds);
  const measured = (r) => r.lags.filter((_, i) => r.created[i] >= start);
  // Until every reader has every event (or 30 s).
  const deadline = Date.now() + 30_000;
  while (readers.some((r) => measured(r).length < written) && Date.now() < deadline) await sleep(50);
  const rss = service.peakRssMb();
  for (const reader of readers) reader.close();
  await service.stop();
  if (apart) await writer.stop();
  const lags = readers.flatMap(measured).sort((a, b) => a - b);
  const complete = readers.filter((r) => measured(r).length === written).length;
  const duplicates = readers.reduce((sum, r) => sum + r.duplicates(), 0);
  return { failed, achieved, written, lags, complete, duplicates, received: lags.length, rss };
}

export async function stream(target, seeded, { duration }) {
  const rate = Number(process.env.BENCH_STREAM_RATE ?? 200);
  const one = await measure(target, seeded, rate, duration, { apart: false });
  const two = await measure(target, seeded, rate, duration, { apart: true });
  for (const run of [one, two]) {
    if (run.failed > 0) throw new Error(`stream: ${run.failed} requests failed`);
  }
  const p = (run, q) => round(percentile(run.lags, q), 0);
  return {
    name: `Event stream, ${READERS} readers of one workspace, products created at ${rate}/s`,
    value: round(READERS * one.achieved * (one.received / (READERS * one.written)), 0),
    unit: 'events/s to readers',
    p99Ms: p(one, 99),
    extra:
      `lag from creation to arrival p50 ${p(one, 50)} ms, p99 ${p(one, 99)} ms, max ${p(one, 100)} ms; ${one.complete}/${READERS} readers got all ${one.written} events, ${one.duplicates} twice; ` +
      `written through a second API process: lag p50 ${p(two, 50)} ms, p99 ${p(two, 99)} ms, ${two.complete}/${READERS} complete, ${two.duplicates} twice`,
    target: 'lag p99 <= 100 ms; every reader gets every event once',
    pass: p(one, 99) <= 100 && p(two, 99) <= 100 && one.complete === READERS && two.complete === READERS && one.duplicates + two.duplicates === 0,
    peakRssMb: Math.max(one.rss, two.rss),
  };
}
