import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSignInCode } from '../src/account/sign-in-store.js';
import type { DeliveryWorker } from '../src/engine/delivery/worker.js';
import { userOf } from './helpers/app.js';
import { heading, record, watch, type PageWatch } from './helpers/dashboard.js';
import { closeJourney, expectNothingLeaked, journeyShortcuts, openOwnerPage, startDashboardApp } from './helpers/dashboard-journey.js';
import { eventually, testWorker } from './helpers/delivery.js';
import type { LiveApp } from './helpers/live.js';
import { LogCapture } from './helpers/log.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { missing } from './helpers/services.js';

/**
 * The dashboard in Debian's Chromium against a live service with a delivery worker and a
 * receiver on 127.0.0.1. The journeys run in order, as a person would; each page is screenshotted
 * (test-artifacts/dashboard/<engine>/) and checked with axe-core. No token, code or secret may
 * appear in a URL the browser asks for or in the service's log.
 */
describe.skipIf(missing('chromium'))('dashboard in Chromium', { timeout: 180_000 }, () => {
  let t: LiveApp;
  let browser: Browser;
  let owner: BrowserContext;
  let page: Page;
  let worker: DeliveryWorker;
  let receiver: Receiver;
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
    receiver = await startReceiver(() => ({ status: 200, body: 'ok' }));
    worker = testWorker(t);
    await worker.start();
    // More than one page of products, for the pager.
    for (let i = 0; i < 22; i++) expect((await t.call(apiKey(), 'POST', '/v1/products', { name: `Item ${i}` })).statusCode).toBe(201);
    ({ browser, owner, page } = await openOwnerPage(seen));
    // A fresh database, a worker and a browser start slowly on a busy machine.
  }, 180_000);
  afterAll(() => closeJourney({ browser, worker, receiver, t }));

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
    expect(log.text.length).toBeGreaterThan(1000);
    expectNothingLeaked(seen, log, secrets);
    // Every page was checked with axe-core: no serious or critical violation on any.
    expect(Object.keys(audit).length).toBeGreaterThanOrEqual(15);
    expect(Object.values(audit).every((n) => n === 0)).toBe(true);
  });
});
