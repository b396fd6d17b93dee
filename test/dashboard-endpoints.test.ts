import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../sdk/src/index.js';
import type { DeliveryWorker } from '../src/engine/delivery/worker.js';
import { amqpQueue, RABBITMQ, uniqueName } from './helpers/brokers.js';
import { heading, record, signInToStore, type PageWatch } from './helpers/dashboard.js';
import { closeJourney, expectNothingLeaked, journeyShortcuts, openOwnerPage, startDashboardApp } from './helpers/dashboard-journey.js';
import { addEndpoint, eventually, testWorker } from './helpers/delivery.js';
import type { LiveApp } from './helpers/live.js';
import { LogCapture } from './helpers/log.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { missing } from './helpers/services.js';

/**
 * Managing endpoints in the dashboard, in Debian's Chromium against a live service with a delivery
 * worker and a receiver on 127.0.0.1 (as test/dashboard.test.ts): the receiver's endpoint paused,
 * re-enabled, edited and rotated; a RabbitMQ endpoint with v1a signatures; the receiver failing until
 * its endpoint is disabled, then re-enabled and a failed delivery replayed. The journeys run in order;
 * each page is screenshotted and checked with axe-core. Once they are over: no token, code or secret
 * in a URL the browser asked for or in the service's log, and no CSP refusal or script error.
 */
describe.skipIf(missing('chromium') || missing('rabbitmq'))('dashboard in Chromium', { timeout: 180_000 }, () => {
  let t: LiveApp;
  let browser: Browser;
  let page: Page;
  let worker: DeliveryWorker;
  let receiver: Receiver;
  let failing = false;
  const log = new LogCapture();
  const seen: PageWatch = { urls: [], problems: [] };
  /** Every secret the journeys handle: none may leak into a URL or the log. */
  const secrets: string[] = [];
  const audit: Record<string, number> = {};
  let endpointSecret = '';
  let endpointId = '';

  const { apiKey, at, nav } = journeyShortcuts(() => t, () => page);

  beforeAll(async () => {
    t = await startDashboardApp(log);
    receiver = await startReceiver(() => ({ status: failing ? 500 : 200, body: failing ? 'down' : 'ok' }));
    worker = testWorker(t);
    await worker.start();
    // The receiver's endpoint, for every product event.
    ({ id: endpointId, secret: endpointSecret } = await addEndpoint(t, receiver.url));
    secrets.push(endpointSecret);
    ({ browser, page } = await openOwnerPage(seen));
    await signInToStore(page, t, secrets);
    // A fresh database, a worker and a browser start slowly on a busy machine.
  }, 180_000);
  afterAll(async () => {
    await closeJourney({ browser, worker, receiver, t });
  });

  it('pauses and re-enables an endpoint, edits and rotates it', async () => {
    await page.goto(at(`/endpoints/${endpointId}`));
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByTestId('endpoint-state').getByText(/Paused by a person/).waitFor();
    expect(await page.getByRole('button', { name: 'Send test event' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Re-enable' }).click();
    await page.getByTestId('endpoint-state').getByText('Receives deliveries.').waitFor();

    await page.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('Description').fill('Edited receiver');
    await page.getByLabel(/Rate limit/).fill('50');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('50 deliveries per second').waitFor();

    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Rotate' }).click();
    const rotated = await page.getByTestId('secret-once').locator('input').inputValue();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(endpointSecret);
    secrets.push(rotated);
    await page.getByText('The previous secret keeps signing until').waitFor();
    await page.getByRole('button', { name: 'Done' }).click();
  });

  it('creates a RabbitMQ endpoint with v1a signatures: the broker fields for its scheme, the URL redacted, the public key shown', async () => {
    const routingKey = uniqueName('svc.dashboard');
    const queue = await amqpQueue(routingKey, 'amq.direct');
    try {
      await nav('Endpoints');
      await page.getByRole('button', { name: 'New endpoint' }).click();
      await heading(page, 'New endpoint');
      await page.getByLabel('URL').fill('https://example.com/hook');
      expect(await page.getByTestId('amqp-fields').count()).toBe(0);
      await page.getByLabel('URL').fill('nats://127.0.0.1:4222');
      await page.getByTestId('nats-fields').waitFor();
      await page.getByLabel('URL').fill(RABBITMQ.url);
      await page.getByTestId('amqp-fields').waitFor();
      expect(await page.getByTestId('nats-fields').count()).toBe(0);
      await page.getByLabel('Exchange').fill('amq.direct');
      await page.getByLabel('Routing key').fill(routingKey);
      await page.getByLabel(/Every order event/).check();
      await page.getByLabel('Signature scheme').selectOption('v1a');
      await record(page, 'endpoint-new-broker', audit);
      await page.getByRole('button', { name: 'Create endpoint' }).click();
      const shown = page.getByTestId('created-public-key');
      await shown.waitFor();
      const publicKey = (await shown.locator('code').textContent())!;
      expect(publicKey).toMatch(/^whpk_/);
      await page.getByRole('button', { name: 'Go to the endpoint' }).click();
      await page.getByTestId('endpoint-signature').getByText(publicKey).waitFor();
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(RABBITMQ.redacted);
      expect(await page.getByTestId('endpoint-route').textContent()).toContain('amq.direct');
      const brokerId = new URL(page.url()).pathname.split('/').pop()!;
      await record(page, 'endpoint-detail-broker', audit);

      await page.getByRole('button', { name: 'Send test event' }).click();
      await page.getByTestId('deliveries').getByText('success').waitFor();
      await expect.poll(() => queue.messages.length).toBe(1);
      const [message] = queue.messages;
      const headers = Object.fromEntries(Object.entries(message.properties.headers!).map(([k, v]) => [k, String(v)]));
      expect(verifyWebhook(publicKey, headers, message.content)).toMatchObject({ type: 'webhook.ping' });

      // Saving an edit leaves the URL, whose password is not on the page, as it is.
      await page.getByRole('button', { name: 'Edit' }).click();
      await page.getByLabel('Description').fill('Order bus');
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.getByText('Order bus').waitFor();
      const [row] = await t.ctx.db.query<{ url_enc: string }>('SELECT url_enc FROM webhook_endpoints WHERE id = $1', [brokerId]);
      expect(t.ctx.secrets.decrypt(row.url_enc)).toBe(RABBITMQ.url);
      await page.getByRole('button', { name: 'Pause' }).click();
      await page.getByTestId('endpoint-state').getByText(/Paused by a person/).waitFor();
      // Back to the receiver's endpoint, where the next journey goes on.
      await page.goto(at(`/endpoints/${endpointId}`));
      await page.getByTestId('endpoint-state').getByText('Receives deliveries.').waitFor();
    } finally {
      await queue.close();
    }
  });

  it('shows an auto-disabled endpoint and its notification; re-enabled, a failed delivery is replayed', async () => {
    failing = true;
    for (let i = 0; i < 5; i++) await t.call(apiKey(), 'POST', '/v1/products', { name: `Lost ${i}` });
    await eventually(async () => (await t.call(apiKey(), 'GET', `/v1/webhooks/endpoints/${endpointId}`)).json().disabledReason === 'auto', 30_000);
    failing = false;
    await page.reload();
    await page.getByTestId('endpoint-state').getByText(/Disabled after 5 consecutive failed deliveries/).waitFor();
    await expect.poll(() => page.getByTestId('unread-count').textContent()).toBe('1');
    await record(page, 'endpoint-auto-disabled', audit);

    await nav('Notifications');
    await heading(page, 'Notifications');
    const note = page.getByTestId('notification').first();
    await note.getByText('webhook.endpoint.auto_disabled').waitFor();
    await record(page, 'notifications', audit);
    await note.getByRole('button', { name: 'Mark as read' }).click();
    await page.getByText('Nothing unread.').waitFor();
    expect(await page.getByTestId('unread-count').count()).toBe(0);

    await note.getByRole('link', { name: 'Open the endpoint' }).click();
    await page.getByRole('button', { name: 'Re-enable' }).click();
    await page.getByTestId('endpoint-state').getByText('Receives deliveries.').waitFor();
    await page.goto(at(`/deliveries?endpointId=${endpointId}&status=failed`));
    await page.getByTestId('deliveries').getByRole('link', { name: /^whd_/ }).first().click();
    await page.getByRole('button', { name: 'Replay' }).click();
    await page.getByText('Replay of').waitFor();
    await eventually(async () => (await page.getByRole('button', { name: 'Refresh' }).click(), (await page.getByRole('heading', { level: 1 }).textContent())!.includes('success')), 20_000);
  });

  it('leaked nothing: no secret in any URL asked for or in the service log; no CSP refusal or script error', () => {
    expectNothingLeaked(seen, log, secrets);
  });
});
