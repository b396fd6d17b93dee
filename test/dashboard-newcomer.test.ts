import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDemoData, type DemoSample } from '../src/cli/demo-data.js';
import { createSignInCode } from '../src/account/sign-in-store.js';
import { DASHBOARD_DIST } from '../src/server/dashboard.js';
import type { DeliveryWorker } from '../src/engine/delivery/worker.js';
import { userOf } from './helpers/app.js';
import { launchChromium } from './helpers/browser.js';
import { heading, record, watch, type PageWatch } from './helpers/dashboard.js';
import { addEndpoint, eventually, testWorker } from './helpers/delivery.js';
import { startLiveApp, type LiveApp } from './helpers/live.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { missing } from './helpers/services.js';

/**
 * The dashboard as a newcomer meets it, on the demo's sample data: the sign-in link opens the
 * workspace with that data; another workspace shows that it is loading; the pages speak to people
 * (no API call where a button does it); prices are typed in major units; ids link to their pages and
 * a box opens any of them; an endpoint's page triggers a chosen event for real, which the endpoint
 * receives. Debian's Chromium against a live service, a delivery worker and a receiver; axe-core on
 * each page.
 */
describe.skipIf(missing('chromium'))('the dashboard as a newcomer finds it', { timeout: 180_000 }, () => {
  let t: LiveApp;
  let browser: Browser;
  let page: Page;
  let worker: DeliveryWorker;
  let receiver: Receiver;
  let sample: DemoSample;
  const seen: PageWatch = { urls: [], problems: [] };
  const audit: Record<string, number> = {};
  const at = (path: string) => `${t.base}/dashboard${path}`;
  const nav = (label: string) => page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: label, exact: true }).click();
  const api = async (path: string) => (await t.call(t.demo.workspaces[0].apiKey, 'GET', path)).json();

  beforeAll(async () => {
    if (!existsSync(join(DASHBOARD_DIST, 'index.html'))) throw new Error('The dashboard is not built: run npm run build first.');
    t = await startLiveApp({ config: { allowPrivateTargets: true, retryScheduleMs: [100], pollIntervalMs: 200 } });
    sample = await t.ctx.db.tx((q) => seedDemoData(q, t.ctx.secrets, t.demo.workspaces[0].id, t.clock.now()));
    receiver = await startReceiver();
    worker = testWorker(t);
    await worker.start();
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    watch(page, seen);
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await worker?.stop();
    await receiver?.close();
    await t?.close();
  });

  it('opens the workspace with the sample data from the sign-in link; another one shows it is loading', async () => {
    const { code } = await createSignInCode(t.ctx.db, userOf(t.demo, 'owner').id, t.clock.now());
    await page.goto(at(`/#code=${code}`));
    await heading(page, 'Store', 120_000);
    await page.getByTestId('endpoint-states').getByText('paused').waitFor();
    expect(await page.getByTestId('endpoint-states').textContent()).toBe('active 0 paused 1 auto-disabled 0');

    // Staging's endpoints held back a moment: the card says it is loading, not that there are none.
    const staging = t.demo.workspaces[1].id;
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route('**/v1/webhooks/endpoints?*', async (route) => {
      if (route.request().headers()['service-workspace-id'] === staging) await held;
      await route.continue();
    });
    await page.getByTestId('workspace-switcher').selectOption({ label: 'Acme Inc. / Staging' });
    await heading(page, 'Staging');
    const card = page.getByRole('article').filter({ has: page.getByRole('heading', { name: 'Endpoints' }) });
    await card.locator('[aria-busy="true"]').getByText('Loading…').waitFor();
    expect(await page.getByTestId('endpoint-states').count()).toBe(0);
    await record(page, 'workspace-loading', audit);
    release();
    expect(await page.getByTestId('endpoint-states').textContent()).toBe('active 0 paused 0 auto-disabled 0');
    await page.unrouteAll();
    await page.getByTestId('workspace-switcher').selectOption({ label: 'Acme Inc. / Store' });
    await heading(page, 'Store');
  });

  it('speaks to people: the sample endpoint says what it is for, a refusal says what to do on the page', async () => {
    await page.goto(at(`/endpoints/${sample.webhookEndpoint.id}`));
    await page.getByTestId('endpoint-state').getByText(/Paused by a person/).waitFor();
    await page.getByText('point it at your receiver').waitFor();
    await page.getByText('paused by a person', { exact: true }).waitFor();
    await page.getByTestId('recover').getByRole('button', { name: 'Preview' }).click();
    const alert = page.getByTestId('recover').getByRole('alert');
    await alert.getByText(/409 ENDPOINT_INACTIVE/).waitFor();
    expect(await alert.textContent()).toContain('re-enable it on its page first');
    expect(await page.locator('main').textContent()).not.toMatch(/PATCH|"active": true/);
    await record(page, 'sample-endpoint', audit);
  });

  it("takes prices in major units, with the currency's decimals", async () => {
    await nav('Products');
    await heading(page, 'Products');
    const create = async (name: string, price: string, currency: string, shown: string) => {
      await page.getByText('New product').click();
      await page.getByLabel('Name').fill(name);
      await page.getByLabel('Currency (ISO 4217)').fill(currency);
      await page.getByLabel('Price', { exact: true }).fill(price);
      expect(await page.getByTestId('price-preview').textContent()).toBe(shown);
      await page.getByRole('button', { name: 'Create product' }).click();
      await page.getByRole('row').filter({ hasText: name }).getByText(shown).waitFor();
    };
    await create('Teapot', '25', 'EUR', '€25.00');
    await create('Tea towel', '12,5', 'EUR', '€12.50');
    await create('Matcha whisk', '1200', 'JPY', '¥1,200');
    await record(page, 'products-priced', audit);
    const prices = (await api('/v1/products?limit=100')).data.map((p: { name: string; price: unknown }) => [p.name, p.price]);
    expect(prices).toEqual(
      expect.arrayContaining([
        ['Teapot', { amount: 2500, currency: 'EUR' }],
        ['Tea towel', { amount: 1250, currency: 'EUR' }],
        ['Matcha whisk', { amount: 1200, currency: 'JPY' }],
      ]),
    );

    // More decimals than the currency has: said on the page, nothing made.
    await page.getByText('New product').click();
    await page.getByLabel('Name').fill('Too precise');
    await page.getByLabel('Currency (ISO 4217)').fill('EUR');
    await page.getByLabel('Price', { exact: true }).fill('19.999');
    await page.getByRole('button', { name: 'Create product' }).click();
    await page.getByRole('alert').getByText('Type the price in EUR with at most 2 decimals').waitFor();
    expect((await api('/v1/products?limit=100')).data.some((p: { name: string }) => p.name === 'Too precise')).toBe(false);
  });

  it('links ids to their pages, opens any id from the box, and filters events by the types the log holds', async () => {
    // A delivery of the sample order: its endpoint and event are links; the event's subject too.
    await page.goto(at(`/deliveries?endpointId=${sample.webhookEndpoint.id}`));
    await page.getByTestId('deliveries').getByRole('link', { name: 'order.created' }).click();
    await heading(page, 'order.created');
    await page.getByRole('link', { name: sample.order.id }).click();
    await page.getByTestId('line-items').waitFor();
    await page.getByTestId('line-items').getByRole('link', { name: sample.products[0].id }).click();
    await heading(page, sample.products[0].name);
    await page.getByTestId('product-events').getByText('product.created').waitFor();
    await record(page, 'product-detail', audit);

    await page.goto(at(`/deliveries?endpointId=${sample.webhookEndpoint.id}`));
    await page.getByTestId('deliveries').getByRole('link', { name: /^whd_/ }).first().click();
    await page.getByText('Attempts', { exact: true }).first().waitFor();
    const facts = page.locator('dl.facts');
    await facts.getByRole('link', { name: sample.webhookEndpoint.id }).waitFor();
    const eventId = (await facts.getByRole('link', { name: /^evt_/ }).textContent())!;

    const jump = page.getByLabel('Id to open');
    await jump.fill(eventId);
    await jump.press('Enter');
    await page.getByLabel('Event body').waitFor();
    expect(new URL(page.url()).pathname).toBe(`/dashboard/events/${eventId}`);
    await jump.fill(` ${sample.order.id.toUpperCase()} `);
    await jump.press('Enter');
    await page.getByTestId('line-items').waitFor();
    await jump.fill('cus_123');
    await jump.press('Enter');
    await page.getByRole('search').getByRole('alert').getByText(/"cus_123" is not an id of an event/).waitFor();
    await record(page, 'jump-refused', audit);

    await nav('Events');
    const types = await page.locator('select[name="type"] option').allTextContents();
    expect(types).toContain('product.created');
    expect(types).toContain('webhook.endpoint.auto_disabled');
    expect(types).not.toContain('webhook.ping');
  });

  it("triggers a chosen event for real from an endpoint's page: the endpoint receives it", async () => {
    const { id } = await addEndpoint(t, receiver.url, ['order.*']);
    await page.goto(at(`/endpoints/${id}`));
    const panel = page.getByTestId('trigger');
    await panel.getByRole('heading', { name: 'Trigger an event' }).waitFor();
    // The types this endpoint takes, not the product ones, nor the test event's.
    expect(await panel.locator('option').allTextContents()).toEqual(['order.created', 'order.updated', 'order.paid', 'order.fulfilled', 'order.canceled', 'order.refunded']);
    await panel.getByLabel('Event type').selectOption('order.refunded');
    await panel.getByRole('button', { name: 'Trigger' }).click();
    const made = panel.getByTestId('triggered');
    await made.getByText('order.refunded').waitFor();
    expect((await made.getByRole('listitem').allTextContents()).map((line) => line.split(' ')[0])).toEqual(['product.created', 'order.created', 'order.paid', 'order.refunded']);
    const orderId = (await made.getByRole('link', { name: /^ord_/ }).first().textContent())!;
    expect((await api(`/v1/orders/${orderId}`)).status).toBe('refunded');

    // Delivered for real, product.created excepted (the endpoint does not take it).
    await eventually(() => receiver.requests.some((r) => JSON.parse(r.body).type === 'order.refunded'), 20_000);
    expect(receiver.requests.map((r) => JSON.parse(r.body).type).sort()).toEqual(['order.created', 'order.paid', 'order.refunded']);
    await page.getByTestId('deliveries').getByRole('row').filter({ hasText: 'order.refunded' }).getByText('success').waitFor();
    await record(page, 'endpoint-triggered', audit);

    // A Viewer, who may not change products or orders, is not offered it.
    const viewer = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    watch(viewer, seen);
    await viewer.goto(at('/'));
    await viewer.getByLabel('Or paste a personal access token').fill(userOf(t.demo, 'viewer').token);
    await viewer.getByRole('button', { name: 'Sign in' }).click();
    await heading(viewer, 'Store');
    await viewer.goto(at(`/endpoints/${id}`));
    await viewer.getByTestId('endpoint-health').waitFor();
    expect(await viewer.getByTestId('trigger').count()).toBe(0);
    await viewer.context().close();
  });

  it('had no CSP refusal or script error, and no serious accessibility violation', () => {
    expect(seen.problems).toEqual([]);
    expect(Object.keys(audit).length).toBeGreaterThanOrEqual(6);
    expect(Object.values(audit).every((n) => n === 0)).toBe(true);
  });
});
