import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECIPES } from '../src/cli/trigger.js';
import { EVENT_TYPES } from '../src/engine/log/catalog.js';
import { CLI, cliBuilt, freePort, request, runCli, startServer, tempDataDir, type Server } from './helpers/cli.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

/**
 * `svc trigger TYPE`: the built command makes each change through the API of a running service
 * (started by the built command too), with the demo credentials of its data folder, and a webhook
 * endpoint subscribed to every product and order event receives the event it names.
 */
describe('svc trigger', () => {
  let server: Server;
  let receiver: Receiver;
  let base: string;
  let apiKey: string;
  let dataDir: string;
  let secret: string;

  beforeAll(async () => {
    if (!cliBuilt()) throw new Error(`${CLI} is missing: build first with npx tsc -p .`);
    receiver = await startReceiver();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    dataDir = tempDataDir('svc-trigger-');
    const env: Record<string, string> = { PORT: String(port), LOG_LEVEL: 'warn', SVC_RATE_LIMIT_API_KEY: '100000', SVC_ALLOW_PRIVATE_TARGETS: '1', SVC_DATA_DIR: dataDir };
    server = await startServer(['--demo'], env);
    apiKey = JSON.parse(readFileSync(join(dataDir, 'demo.json'), 'utf8')).workspaces[0].apiKey;
    const endpoint = await request(`${base}/v1/webhooks/endpoints`, apiKey, { method: 'POST', body: { url: `${receiver.url}/hooks`, subscribedEvents: ['product.*', 'order.*'] } });
    expect(endpoint.status).toBe(201);
    secret = endpoint.body.secret;
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    await receiver?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('makes every product and order event type, and the subscribed endpoint receives each, signed', async () => {
    const types = EVENT_TYPES.filter((type) => /^(product|order)\./.test(type));
    expect(Object.keys(RECIPES).sort()).toEqual([...types].sort());
    const webhook = new Webhook(secret);
    for (const type of types) {
      // No credential or address given: both come from the demo file of SVC_DATA_DIR.
      const run = await runCli(['trigger', type, '--json'], { SVC_DATA_DIR: dataDir });
      expect(run.code, run.stderr).toBe(0);
      const result = JSON.parse(run.stdout);
      expect(result).toMatchObject({ type, eventId: expect.stringMatching(/^evt_\w{26}$/), subject: { type: type.split('.')[0], id: expect.any(String) } });
      const event = await request(`${base}/v1/events/${result.eventId}`, apiKey);
      expect(event.body).toMatchObject({ id: result.eventId, type, subject: { id: result.subject.id, type: result.subject.type } });
      expect(result.requests[0]).toMatchObject({ method: 'POST', path: '/v1/products', status: 201 });

      const deadline = Date.now() + 30_000;
      const received = () => receiver.requests.find((r) => JSON.parse(r.body).id === result.eventId);
      while (!received() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      const delivery = received();
      expect(delivery, `${type} delivered`).toBeDefined();
      expect(webhook.verify(delivery!.body, delivery!.flatHeaders)).toMatchObject({ id: result.eventId, type });
    }
  }, 180_000);

  it('prints each request and the event in text, with the credential and address given', async () => {
    const run = await runCli(['trigger', 'order.refunded', '--api-key', apiKey, '--base-url', base], {});
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(5);
    expect(lines[0]).toMatch(/^POST {3}\/v1\/products {2}\[201\] {2}prd_\w{26}$/);
    expect(lines[1]).toMatch(/^POST {3}\/v1\/orders {2}\[201\] {2}ord_\w{26}$/);
    expect(lines[2]).toMatch(/^POST {3}\/v1\/orders\/ord_\w{26}\/pay {2}\[200\]$/);
    expect(lines[3]).toMatch(/^POST {3}\/v1\/orders\/ord_\w{26}\/refund {2}\[200\]$/);
    const [, eventId, orderId] = /^Triggered order\.refunded: (evt_\w{26}) \(order (ord_\w{26})\)$/.exec(lines[4])!;
    expect((await request(`${base}/v1/orders/${orderId}`, apiKey)).body.status).toBe('refunded');
    expect((await request(`${base}/v1/events/${eventId}`, apiKey)).body.type).toBe('order.refunded');
  });

  it('refuses an unknown type with the list (status 2), and says when it has no credential or cannot reach the service', async () => {
    const unknown = await runCli(['trigger', 'invoice.paid'], { SVC_DATA_DIR: dataDir });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(`svc: svc trigger cannot make "invoice.paid"; it makes one of ${Object.keys(RECIPES).join(', ')}\n`);
    const none = await runCli(['trigger'], { SVC_DATA_DIR: dataDir });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('give an event type: svc trigger TYPE, one of product.created');

    const empty = tempDataDir('svc-trigger-empty-');
    try {
      const noKey = await runCli(['trigger', 'order.paid'], { SVC_DATA_DIR: empty });
      expect(noKey.code).toBe(2);
      expect(noKey.stderr).toBe(`svc: no credential: pass --api-key, set SVC_API_KEY, or start the service with svc serve --demo (its key is then read from ${join(empty, 'demo.json')})\n`);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }

    const closed = `http://127.0.0.1:${await freePort()}`;
    const away = await runCli(['trigger', 'product.created', '--base-url', closed], { SVC_API_KEY: apiKey });
    expect(away.code).toBe(1);
    expect(away.stderr).toBe(`svc: cannot reach ${closed} (ECONNREFUSED): start the service (svc serve), or point --base-url or SVC_BASE_URL at it\n`);

    const refused = await runCli(['trigger', 'product.created', '--base-url', base], { SVC_API_KEY: `svc_sk_${'A'.repeat(36)}` });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^svc: POST \/v1\/products answered 401 UNAUTHENTICATED: .+\n$/);

    const help = await runCli(['trigger', '--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('svc trigger TYPE');
    expect((await runCli(['--help'], {})).stdout).toContain('svc trigger TYPE');
  });
});
