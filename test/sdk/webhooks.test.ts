import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveryHeaders } from '../../src/engine/delivery/attempt.js';
import { createSvcClient, verifyWebhook, WebhookVerificationError, type EventOf, type SvcClient } from '../../sdk/src/index.js';
import { deliveriesOf, eventually, testWorker } from '../helpers/delivery.js';
import { startLiveApp, type LiveApp } from '../helpers/live.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

const file = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

/** A running example of sdk/examples, with what it has printed so far. */
function runExample(name: string, env: Record<string, string>): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [`sdk/examples/${name}`], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk));
  return { child, output: () => output, exited: new Promise((resolve) => child.on('exit', resolve)) };
}

/** Webhooks with the SDK: a real delivery verified by verifyWebhook, and the examples the docs show, run as written. */
describe('SDK webhooks', () => {
  let t: LiveApp;
  let svc: SvcClient;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await startLiveApp({ config: { allowPrivateTargets: true } });
    svc = createSvcClient({ baseUrl: t.base, token: t.demo.workspaces[0].apiKey });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  it('verifies a real delivery with verifyWebhook, returning the typed event, and refuses a forged one', async () => {
    const endpoint = await svc.POST('/v1/webhooks/endpoints', { body: { url: `${receiver.url}/hooks`, subscribedEvents: ['product.*'] } });
    const hat = await svc.POST('/v1/products', { body: { name: 'Signed hat' } });
    expect(await testWorker(t).runDue()).toBe(1);
    const [received] = receiver.requests;

    // As Node.js gives them (req.headers), as the Fetch API does, and as a plain object.
    for (const headers of [received.headers, new Headers(received.flatHeaders), received.flatHeaders]) {
      const event = verifyWebhook(endpoint.secret!, headers, received.raw);
      expect(event).toEqual({ id: expect.stringMatching(/^evt_/), type: 'product.created', created: expect.any(String), subject: { id: hat.id, type: 'product', url: `/v1/products/${hat.id}` } });
    }
    const event = verifyWebhook(endpoint.secret!, received.headers, received.body) as EventOf<'product.created'>;
    expect(await svc.GET('/v1/events/{eventId}', { params: { path: { eventId: event.id } } })).toEqual(event);
    expect(await svc.fetchSubject(event)).toEqual(hat);

    expect(() => verifyWebhook(endpoint.secret!, received.headers, received.body.replace(hat.id, 'prd_other'))).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook(endpoint.secret!, received.headers, Buffer.from(JSON.stringify(JSON.parse(received.body), null, 1)))).toThrow(WebhookVerificationError);
    const other = (await svc.POST('/v1/webhooks/endpoints/{endpointId}/rotate-secret', { params: { path: { endpointId: endpoint.id } } })).secret!;
    expect(() => verifyWebhook(other, received.headers, received.raw)).toThrow(WebhookVerificationError);
    const { 'webhook-signature': _, ...unsigned } = received.flatHeaders;
    expect(() => verifyWebhook(endpoint.secret!, unsigned, received.raw)).toThrow(WebhookVerificationError);

    // After a rotation both secrets sign, so either verifies; a deleted subject fetches as null.
    await svc.DELETE('/v1/products/{productId}', { params: { path: { productId: hat.id } } });
    expect(await testWorker(t).runDue()).toBe(1);
    const deleted = receiver.requests[1];
    expect(deleted.flatHeaders['webhook-signature'].split(' ')).toHaveLength(2);
    for (const secret of [endpoint.secret!, other]) {
      const gone = verifyWebhook(secret, deleted.headers, deleted.raw);
      expect(gone.type).toBe('product.deleted');
      expect(await svc.fetchSubject(gone as EventOf<'product.deleted'>)).toBeNull();
    }
  });

  it('runs the quickstart of sdk/README.md as written', async () => {
    const quickstart = file('sdk/examples/quickstart.mjs');
    expect(file('sdk/README.md')).toContain(quickstart);
    const run = runExample('quickstart.mjs', { SVC_BASE_URL: t.base, SVC_API_KEY: t.demo.workspaces[0].apiKey });
    expect(await run.exited, run.output()).toBe(0);
    const lines = run.output().trim().split('\n');
    const created = /^fetched (prd_\w+)$/.exec(lines.at(-2)!)?.[1];
    expect(lines).toContain(`${created} Hat`);
    expect(lines.at(-1)).toMatch(/^NOT_FOUND req_\w+$/);
  });

  it('runs the receiver of docs/receiving-webhooks.md as written: verifies, answers 204, skips a repeat, fetches the subject', async () => {
    const example = file('sdk/examples/receiver.mjs');
    expect(file('docs/receiving-webhooks.md')).toContain(example);
    // The secret comes with the endpoint, whose URL is known once the receiver listens: create, start, then point it there.
    const endpoint = await svc.POST('/v1/webhooks/endpoints', { body: { url: `${receiver.url}/placeholder`, subscribedEvents: ['product.*'] } });
    const run = runExample('receiver.mjs', { PORT: '0', SVC_WEBHOOK_SECRET: endpoint.secret!, SVC_BASE_URL: t.base, SVC_API_KEY: t.demo.workspaces[0].apiKey });
    try {
      await eventually(() => /port: \d+/.test(run.output()));
      const url = `http://127.0.0.1:${/port: (\d+)/.exec(run.output())![1]}/webhooks`;
      await svc.PATCH('/v1/webhooks/endpoints/{endpointId}', { params: { path: { endpointId: endpoint.id } }, body: { url } });

      const scarf = await svc.POST('/v1/products', { body: { name: 'Scarf' } });
      const { eventId: pingId } = await svc.POST('/v1/webhooks/endpoints/{endpointId}/send-test-event', { params: { path: { endpointId: endpoint.id } } });
      await testWorker(t).runDue();
      await eventually(() => run.output().includes(`verified webhook.ping ${pingId}`) && run.output().includes(`product ${scarf.id}`));
      const deliveries = await deliveriesOf(t, endpoint.id);
      expect(deliveries.map((d) => [d.status, d.response_status])).toEqual([['success', 204], ['success', 204]]);

      // A retry carries the same webhook-id: the receiver answers it and does not work twice.
      const body = JSON.stringify({ id: 'evt_again', type: 'webhook.ping', created: new Date().toISOString() });
      const repeat = () => fetch(url, { method: 'POST', headers: deliveryHeaders([endpoint.secret!], deliveries[0].id, new Date(), body), body });
      expect((await repeat()).status).toBe(204);
      await eventually(() => run.output().includes(`repeat of ${deliveries[0].id}`));
      const forged = await fetch(url, { method: 'POST', headers: deliveryHeaders([endpoint.secret!], 'whd_forged', new Date(), body), body: body.replace('again', 'forged') });
      expect(forged.status).toBe(400);
      await eventually(() => run.output().includes('refused: WebhookVerificationError'));
      expect(run.output()).not.toContain('evt_forged');
    } finally {
      run.child.kill();
      await run.exited;
    }
  });
});
