// The delivery workers' capacity over a run, as the service's /metrics shows it
// (svc_webhook_worker_capacity): sampled every 250 ms from a service started with SVC_METRICS_PORT.
// A build without the metric reports none.
import { freePort } from './lib.mjs';

/** Env for startService that turns the metrics port on, and a watcher to start once it runs. */
export async function capacityWatch() {
  const port = await freePort();
  const samples = [];
  let timer = null;
  const sample = async () => {
    try {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith('svc_webhook_worker_capacity '));
      if (line) samples.push({ at: performance.now(), value: Number(line.split(' ')[1]) });
    } catch {
      // not up yet, or gone
    }
  };
  return {
    env: { SVC_METRICS_PORT: String(port) },
    start() {
      void sample();
      timer = setInterval(sample, 250);
    },
    /** Stops sampling and says what the capacity was: its least and greatest value and its first ones. */
    stop() {
      clearInterval(timer);
      if (samples.length === 0) return 'capacity: not exposed';
      const values = samples.map((s) => s.value);
      const first = values.slice(0, 4).join(', ');
      return `worker capacity over the run: least ${Math.min(...values)}, most ${Math.max(...values)}, first samples ${first} (${samples.length} samples, 250 ms apart)`;
    },
  };
}
