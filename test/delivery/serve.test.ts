import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cliBuilt, freePort, request, startServer, tempDataDir, type Server } from '../helpers/cli.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

/**
 * `svc serve` runs the delivery workers beside the API by default: a product created over HTTP
 * reaches a receiver with nothing else running, on the embedded database of a fresh data folder.
 */
describe('svc serve delivers webhooks', () => {
  let server: Server;
  let receiver: Receiver;
  let base: string;
  let apiKey: string;
  let dataDir: string | null = null;

  beforeAll(async () => {
    if (!cliBuilt()) throw new Error(`${CLI} is missing: build first with npx tsc -p .`);
    receiver = await startReceiver();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const env: Record<string, string> = { PORT: String(port), LOG_LEVEL: 'warn', SVC_ALLOW_PRIVATE_TARGETS: '1', SVC_RATE_LIMIT_API_KEY: '100000' };
    dataDir = tempDataDir('svc-serve-');
    server = await startServer(['--demo'], { ...env, SVC_DATA_DIR: dataDir });
    apiKey = JSON.parse(readFileSync(join(dataDir, 'demo.json'), 'utf8')).workspaces[0].apiKey;
  });
  afterAll(async () => {
    await server?.stop();
    await receiver?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('sends a signed delivery for a product created over HTTP, and stops cleanly', async () => {
    const endpoint = await request(`${base}/v1/webhooks/endpoints`, apiKey, { method: 'POST', body: { url: `${receiver.url}/in`, subscribedEvents: ['product.*'] } });
    expect(endpoint.status).toBe(201);
    const product = await request(`${base}/v1/products`, apiKey, { method: 'POST', body: { name: 'Served hat' } });
    expect(product.status).toBe(201);

    await receiver.waitFor(1, 30_000);
    const [received] = receiver.requests;
    const body = new Webhook(endpoint.body.secret).verify(received.body, received.flatHeaders) as { type: string; subject: { id: string } };
    expect(body).toMatchObject({ type: 'product.created', subject: { id: product.body.id } });

    const deliveryId = received.flatHeaders['webhook-id'];
    let delivery: { status: string } | null = null;
    for (let i = 0; i < 100 && delivery?.status !== 'success'; i++) {
      delivery = (await request(`${base}/v1/webhooks/deliveries/${deliveryId}`, apiKey)).body.delivery;
      if (delivery?.status !== 'success') await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(delivery).toMatchObject({ status: 'success', attempt: 1, responseStatus: 200 });
    expect(await server.stop()).toBe(0);
  });
});
