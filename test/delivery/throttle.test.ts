import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../src/engine/delivery/worker.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { addEndpoint, createProduct, deliveriesOf, eventually } from '../helpers/delivery.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

/**
 * A receiver that answers 429 or 503 is sent fewer attempts at once, and the endpoint shows it as
 * throttled (throttle_share, throttled_since) until its answers bring its share back.
 */
describe('throttling an endpoint that asks to slow down', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  async function setup(script: Parameters<typeof startReceiver>[0]) {
    const t: TestApp = await startTestApp({ config: { allowPrivateTargets: true, retryScheduleMs: Array(30).fill(200) } });
    cleanup.push(() => t.close());
    const receiver: Receiver = await startReceiver(script);
    cleanup.push(() => receiver.close());
    const endpoint = await addEndpoint(t, `${receiver.url}/hooks`);
    const worker = new DeliveryWorker(t.ctx);
    cleanup.push(() => worker.stop());
    return { t, receiver, endpoint, worker };
  }

  /** The endpoint's throttle as the API shows it. */
  async function throttleOf(t: TestApp, endpointId: string): Promise<{ concurrency: number; since: string } | null> {
    const res = await t.call(t.demo.workspaces[0].apiKey, 'GET', `/v1/webhooks/endpoints/${endpointId}`);
    expect(res.statusCode).toBe(200);
    return res.json().throttle;
  }

  it('halves the attempts in flight on 429 and 503, shows the throttle, and clears it once answers come back', async () => {
    let inFlight = 0;
    let peakWhileRefusing = 0;
    let refusing = true;
    const { t, receiver, endpoint, worker } = await setup(() => {
      inFlight++;
      if (refusing) peakWhileRefusing = Math.max(peakWhileRefusing, inFlight);
      setTimeout(() => inFlight--, 30);
      return refusing ? { status: inFlight % 2 ? 429 : 503, delayMs: 30 } : { status: 200, delayMs: 30 };
    });
    for (let i = 0; i < 40; i++) await createProduct(t, `Hat ${i}`);
    await worker.start();

    await eventually(async () => (await throttleOf(t, endpoint.id)) !== null, 5_000);
    const throttled = await throttleOf(t, endpoint.id);
    expect(throttled?.concurrency).toBe(1);
    expect(Date.parse(throttled!.since)).toBeLessThanOrEqual(Date.now());
    // Four at once at first, then one probe at a time: never more than the first round.
    await receiver.waitFor(30);
    expect(peakWhileRefusing).toBeLessThanOrEqual(4);

    refusing = false;
    await eventually(async () => (await deliveriesOf(t, endpoint.id)).every((r) => r.status === 'success'), 15_000);
    await eventually(async () => (await throttleOf(t, endpoint.id)) === null, 5_000);
    const [row] = await t.ctx.db.query<{ throttle_share: number | null }>('SELECT throttle_share FROM webhook_endpoints WHERE id = $1', [endpoint.id]);
    expect(row.throttle_share).toBeNull();
  });

  it('clears a throttle no worker holds any more at the first answer that asks for no slow-down', async () => {
    const { t, receiver, endpoint, worker } = await setup(() => ({ status: 200 }));
    // Left by a worker that stopped while the endpoint was throttled.
    await t.ctx.db.query("UPDATE webhook_endpoints SET throttle_share = 2, throttled_since = now() - interval '1 hour' WHERE id = $1", [endpoint.id]);
    expect((await throttleOf(t, endpoint.id))?.concurrency).toBe(2);
    await createProduct(t, 'Hat');
    await worker.start();
    await receiver.waitFor(1);
    await eventually(async () => (await throttleOf(t, endpoint.id)) === null, 5_000);
  });
});
