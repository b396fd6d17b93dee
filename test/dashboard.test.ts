import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSignInCode } from '../src/dashboard/store.js';
import { DASHBOARD_DIST } from '../src/dashboard/static.js';
import { loggerOptions } from '../src/http/logger.js';
import type { DeliveryWorker } from '../src/webhooks/engine/worker.js';
import { userOf } from './helpers/app.js';
import { launchChromium } from './helpers/browser.js';
import { heading, record, watch, type PageWatch } from './helpers/dashboard.js';
import { eventually, testWorker } from './helpers/delivery.js';
import { amqpQueue, RABBITMQ, uniqueName } from './helpers/brokers.js';
import { verifyWebhook } from '../sdk/src/index.js';
import { startLiveApp, type LiveApp } from './helpers/live.js';
import { LogCapture } from './helpers/log.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

/**
 * Issue 21: the dashboard in Debian's Chromium against a live service with a delivery worker and a
 * receiver on 127.0.0.1. The journeys run in order, as a person would; each page is screenshotted
 * (test-artifacts/dashboard/<engine>/) and checked with axe-core. No token, code or secret may
 * appear in a URL the browser asks for or in the service's log.
 */
describe('dashboard in Chromium', { timeout: 180_000 }, () => {
  let t: LiveApp;
  let browser: Browser;
  let owner: BrowserContext;
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

  const apiKey = () => t.demo.workspaces[0].apiKey;
  const at = (path: string) => `${t.base}/dashboard${path}`;
  const nav = async (label: string) => page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: label, exact: true }).click();

  beforeAll(async () => {
    if (!existsSync(join(DASHBOARD_DIST, 'index.html'))) throw new Error('The dashboard is not built: run npm run build first.');
    t = await startLiveApp({ config: { allowPrivateTargets: true, retryScheduleMs: [100], pollIntervalMs: 200, rateLimitPat: 10_000 }, logger: loggerOptions('info', log) });
    receiver = await startReceiver(() => ({ status: failing ? 500 : 200, body: failing ? 'down' : 'ok' }));
    worker = testWorker(t);
    await worker.start();
    // More than one page of products, for the pager.
    for (let i = 0; i < 22; i++) expect((await t.call(apiKey(), 'POST', '/v1/products', { name: `Item ${i}` })).statusCode).toBe(201);
    browser = await launchChromium();
    owner = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await owner.newPage();
    watch(page, seen);
    // A fresh database, a worker and a browser start slowly on a busy machine.
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await worker?.stop();
    await receiver?.close();
    await t?.close();
  });

  it('signs in with a one-time link: the code leaves the address bar, the token lives in session storage only', async () => {
    const { code } = await createSignInCode(t.ctx.db, userOf(t.demo, 'owner').id, t.clock.now());
    secrets.push(code);
    await page.goto(at(`/#code=${code}`));
    // The browser's first page: its renderer starts and compiles the scripts, slowly on a busy machine.
    // The first workspace is the oldest: Store, the one with data (Staging is made a millisecond later).
    await heading(page, 'Store', 120_000);
    expect(page.url()).toBe(at('/'));
    const session = JSON.parse((await page.evaluate(() => sessionStorage.getItem('svc.dashboard.session')))!);
    expect(session).toMatchObject({ source: 'link', token: expect.stringMatching(/^svc_pat_/), user: { email: userOf(t.demo, 'owner').email } });
    secrets.push(session.token);
    expect(await page.evaluate(() => JSON.stringify(localStorage))).not.toContain('svc_pat_');
    await record(page, 'overview', audit);

    // The link is single use: opened again, it is refused with the API's message and request id.
    const again = await owner.newPage();
    watch(again, seen);
    await again.goto(at(`/#code=${code}`));
    await again.getByRole('alert').getByText('unknown, used or expired').waitFor({ timeout: 90_000 });
    expect(await again.getByTestId('request-id').textContent()).toMatch(/^req_/);
    await record(again, 'sign-in-refused', audit);
    await again.close();
  });

  it('switches workspace and back', async () => {
    await page.getByTestId('workspace-switcher').selectOption({ label: 'Acme Inc. / Staging' });
    await heading(page, 'Staging');
    await page.getByTestId('workspace-switcher').selectOption({ label: 'Acme Inc. / Store' });
    await heading(page, 'Store');
  });

  it('lists products a page at a time, following the API page URLs', async () => {
    await nav('Products');
    await heading(page, 'Products');
    await page.getByRole('cell', { name: /^Item 21 / }).waitFor();
    await record(page, 'products', audit);
    await page.getByRole('button', { name: 'Older →' }).click();
    await page.getByText('Page 2').waitFor();
    await page.getByRole('cell', { name: /^Item 1 / }).waitFor();
    await page.getByRole('button', { name: '← Newer' }).click();
    await page.getByRole('cell', { name: /^Item 21 / }).waitFor();
  });

  it('shows the API error and its request id when a form is refused', async () => {
    await nav('Endpoints');
    await heading(page, 'Endpoints');
    await page.getByRole('button', { name: 'New endpoint' }).click();
    await heading(page, 'New endpoint');
    await page.getByLabel('URL').fill('ftp://example.com/hook');
    await page.getByLabel(/Every product event/).check();
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    const alert = page.getByRole('alert');
    await alert.getByText(/400 VALIDATION/).waitFor();
    await expect.poll(() => alert.textContent()).toMatch(/Invalid url/);
    expect(await alert.getByTestId('request-id').textContent()).toMatch(/^req_/);
    await record(page, 'endpoint-new-refused', audit);
  });

  it('creates an endpoint with the catalog picker; its secret is shown once and verifies a test event', async () => {
    await page.getByLabel('URL').fill(receiver.url);
    await page.getByLabel('Description').fill('Local receiver');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    const secret = page.getByTestId('secret-once').locator('input');
    await secret.waitFor();
    endpointSecret = await secret.inputValue();
    expect(endpointSecret).toMatch(/^whsec_/);
    secrets.push(endpointSecret);
    await record(page, 'endpoint-created-secret', audit);
    await page.getByRole('button', { name: 'Go to the endpoint' }).click();
    await page.getByRole('button', { name: 'Send test event' }).waitFor();
    endpointId = new URL(page.url()).pathname.split('/').pop()!;
    expect(endpointId).toMatch(/^whe_/);

    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.getByRole('status').getByText(/Test event queued as delivery whd_/).waitFor();
    await page.getByTestId('deliveries').getByText('success').waitFor();
    const ping = receiver.requests.at(-1)!;
    expect(JSON.parse(ping.body).type).toBe('webhook.ping');
    expect(() => new Webhook(endpointSecret).verify(ping.body, ping.flatHeaders)).not.toThrow();
    await record(page, 'endpoint-detail', audit);
  });

  it('shows the delivery of a product created through the API, its request and response, and replays it', async () => {
    await t.call(apiKey(), 'POST', '/v1/products', { name: 'Watched hat' });
    const row = page.getByTestId('deliveries').getByRole('row').filter({ hasText: 'product.created' });
    await row.getByText('success').waitFor();
    const before = receiver.requests.length;
    await row.getByRole('link').first().click();
    await heading(page, /product\.created/);
    await page.getByRole('rowheader', { name: 'webhook-signature' }).waitFor();
    await page.getByLabel('Response body').getByText('ok').waitFor();
    await record(page, 'delivery-detail', audit);

    const original = new URL(page.url()).pathname.split('/').pop()!;
    await page.getByRole('button', { name: 'Replay' }).click();
    await page.getByText('Replay of').waitFor();
    expect(new URL(page.url()).pathname.split('/').pop()).not.toBe(original);
    await eventually(() => receiver.requests.length > before);
    expect(JSON.parse(receiver.requests.at(-1)!.body)).toMatchObject({ type: 'product.created' });
  });

  it('filters deliveries and events', async () => {
    await nav('Deliveries');
    await heading(page, 'Deliveries');
    await page.getByLabel('Event type').selectOption('webhook.ping');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => page.url()).toContain('eventType=webhook.ping');
    await page.getByTestId('deliveries').getByText('webhook.ping').first().waitFor();
    expect(await page.getByTestId('deliveries').getByText('product.created').count()).toBe(0);
    await record(page, 'deliveries', audit);

    await nav('Events');
    await heading(page, 'Events');
    await page.getByRole('link', { name: /^evt_/ }).first().click();
    await heading(page, /product\./);
    await page.getByLabel('Event body').waitFor();
    await record(page, 'event-detail', audit);
    await nav('Events');
    await page.locator('select[name="type"]').selectOption('product.deleted');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByTestId('empty').getByText('No event matches these filters').waitFor();
    await record(page, 'events-empty-filtered', audit);
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
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('amqp://guest:***@127.0.0.1:5672/');
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

  it('issues an API key shown once with a copy button, and revokes it: the key then gets 401', async () => {
    await nav('API keys');
    await heading(page, 'API keys');
    await page.getByLabel('Name').fill('Browser-made key');
    await page.getByRole('button', { name: 'Create API key' }).click();
    const key = await page.getByTestId('secret-once').locator('input').inputValue();
    expect(key).toMatch(/^svc_sk_/);
    secrets.push(key);
    await page.getByRole('button', { name: 'Copy' }).waitFor();
    await record(page, 'api-key-created', audit);
    expect((await t.call(key, 'GET', '/v1/products')).statusCode).toBe(200);
    await page.getByRole('button', { name: 'Done' }).click();

    await page.getByRole('button', { name: 'Revoke Browser-made key' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('row').filter({ hasText: 'Browser-made key' }).getByText('revoked').first().waitFor();
    await record(page, 'api-keys', audit);
    expect((await t.call(key, 'GET', '/v1/products')).statusCode).toBe(401);
  });

  it('gives a Viewer, signed in with a pasted token, no write controls', async () => {
    const viewer = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const phone = await viewer.newPage();
    watch(phone, seen);
    const token = userOf(t.demo, 'viewer').token;
    secrets.push(token);
    await phone.goto(at('/'));
    await phone.getByRole('heading', { name: 'Sign in to svc' }).waitFor();
    await record(phone, 'sign-in-phone', audit);
    await phone.getByLabel('Or paste a personal access token').fill(token);
    await phone.getByRole('button', { name: 'Sign in' }).click();
    await heading(phone, 'Store');
    await record(phone, 'overview-viewer-phone', audit);

    const sections = phone.getByRole('navigation', { name: 'Sections' });
    expect(await sections.getByRole('link', { name: 'API keys' }).count()).toBe(0);
    await sections.getByRole('link', { name: 'Products', exact: true }).click();
    await phone.getByRole('cell', { name: /^(Item 21|Lost 4) / }).first().waitFor();
    for (const name of ['New product', 'Delete', 'Deactivate']) expect(await phone.getByText(name, { exact: true }).count(), name).toBe(0);
    await sections.getByRole('link', { name: 'Endpoints', exact: true }).click();
    await phone.getByRole('link', { name: receiver.url }).click();
    await phone.getByTestId('endpoint-state').waitFor();
    await record(phone, 'endpoint-detail-viewer-phone', audit);
    for (const name of ['Send test event', 'Pause', 'Re-enable', 'Edit', 'Rotate secret', 'Delete']) expect(await phone.getByRole('button', { name, exact: true }).count(), name).toBe(0);
    await phone.getByTestId('deliveries').getByRole('link', { name: /^whd_/ }).first().click();
    await heading(phone, /\./);
    expect(await phone.getByRole('button', { name: 'Replay' }).count()).toBe(0);
    // The API refuses the Viewer's writes regardless of what the page offers.
    expect((await t.call(token, 'POST', `/v1/workspaces/${t.demo.workspaces[0].id}/products`, { name: 'x' })).statusCode).toBe(403);
    await viewer.close();
  });

  it('signs out: the token is cleared from the tab and revoked on the server', async () => {
    const token = JSON.parse((await page.evaluate(() => sessionStorage.getItem('svc.dashboard.session')))!).token;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You are signed out.').waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect((await t.call(token, 'GET', '/v1/me')).statusCode).toBe(401);
  });

  it('leaked nothing: no secret in any URL asked for or in the service log; no CSP refusal or script error', () => {
    expect(seen.problems).toEqual([]);
    const logged = log.text;
    expect(logged.length).toBeGreaterThan(1000);
    for (const secret of secrets) {
      expect(seen.urls.filter((url) => url.includes(secret)), 'a URL').toEqual([]);
      expect(logged.includes(secret), 'the log').toBe(false);
    }
    // Every page was checked with axe-core: no serious or critical violation on any.
    expect(Object.keys(audit).length).toBeGreaterThanOrEqual(15);
    expect(Object.values(audit).every((n) => n === 0)).toBe(true);
  });
});
