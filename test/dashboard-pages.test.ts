import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryWorker } from '../src/engine/delivery/worker.js';
import { userOf } from './helpers/app.js';
import { heading, record, signInToStore, watch, type PageWatch } from './helpers/dashboard.js';
import { closeJourney, expectNothingLeaked, journeyShortcuts, openOwnerPage, startDashboardApp } from './helpers/dashboard-journey.js';
import { addEndpoint, eventually, testWorker } from './helpers/delivery.js';
import type { LiveApp } from './helpers/live.js';
import { LogCapture } from './helpers/log.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { missing } from './helpers/services.js';

/**
 * The dashboard's orders, attempts timeline, endpoint statistics and live tail, in Debian's Chromium
 * against a live service with a delivery worker and a receiver on 127.0.0.1 (as test/dashboard.test.ts).
 * Each page is screenshotted and checked with axe-core; no token or code may appear in a URL the
 * browser asks for (the live tail's stream included) or in the service's log.
 */
describe.skipIf(missing('chromium'))('dashboard pages in Chromium', { timeout: 180_000 }, () => {
  let t: LiveApp;
  let browser: Browser;
  let page: Page;
  let worker: DeliveryWorker;
  let receiver: Receiver;
  const log = new LogCapture();
  const seen: PageWatch = { urls: [], problems: [] };
  const secrets: string[] = [];
  const audit: Record<string, number> = {};
  /** Stream requests the pages started, and those that ended (aborted or finished). */
  const streams = { started: 0, ended: 0 };
  const productIds: string[] = [];
  const orderIds: string[] = [];

  const { apiKey, at, nav } = journeyShortcuts(() => t, () => page);
  const api = async (method: 'GET' | 'POST', url: string, body?: unknown) => {
    const res = await t.call(apiKey(), method, url, body);
    expect(res.statusCode, `${method} ${url}: ${res.body}`).toBeLessThan(300);
    return res.json();
  };
  const placeOrder = async () => {
    const order = await api('POST', '/v1/orders', { lineItems: [{ productId: productIds[0], quantity: 2 }, { productId: productIds[1], quantity: 1 }], customerEmail: 'ada@example.com' });
    orderIds.push(order.id);
    return order.id as string;
  };

  beforeAll(async () => {
    t = await startDashboardApp(log);
    receiver = await startReceiver();
    worker = testWorker(t);
    await worker.start();
    for (const [name, amount] of [['Espresso beans', 2400], ['Kettle', 5900]] as const) {
      productIds.push((await api('POST', '/v1/products', { name, price: { amount, currency: 'EUR' } })).id);
    }
    ({ browser, page } = await openOwnerPage(seen));
    page.on('request', (request) => request.url().includes('/v1/events/stream') && streams.started++);
    page.on('requestfailed', (request) => request.url().includes('/v1/events/stream') && streams.ended++);
    page.on('requestfinished', (request) => request.url().includes('/v1/events/stream') && streams.ended++);

    await signInToStore(page, t, secrets);
    // The orders list, still empty (test/dashboard-orders-empty.test.ts): the first journey starts there.
    await nav('Orders');
    await heading(page, 'Orders');
  }, 180_000);
  afterAll(() => closeJourney({ browser, worker, receiver, t }));

  it('lists orders page by page, opens one with its lines, pays it and shows the payment in its history', async () => {
    for (let i = 0; i < 21; i++) await placeOrder();
    await page.reload();
    const rows = page.getByTestId('orders').getByRole('row');
    await rows.filter({ hasText: orderIds[20] }).waitFor();
    expect(await rows.count()).toBe(21);
    await rows.filter({ hasText: orderIds[20] }).getByText('€107.00').waitFor();
    await record(page, 'orders', audit);
    await page.getByRole('button', { name: 'Older →' }).click();
    await page.getByText('Page 2').waitFor();
    await rows.filter({ hasText: orderIds[0] }).waitFor();
    await page.getByRole('button', { name: '← Newer' }).click();

    await page.getByRole('link', { name: orderIds[20] }).click();
    await heading(page, /€107\.00/);
    const lines = page.getByTestId('line-items');
    await lines.getByRole('row').filter({ hasText: 'Espresso beans' }).getByText('€48.00').waitFor();
    await lines.getByRole('row').filter({ hasText: 'Kettle' }).getByText('€59.00').first().waitFor();
    // Only what a pending order allows is offered.
    for (const name of ['Mark fulfilled', 'Refund']) expect(await page.getByRole('button', { name, exact: true }).count(), name).toBe(0);
    await page.getByTestId('status-history').getByText('order.created').waitFor();

    await page.getByRole('button', { name: 'Mark paid' }).click();
    await page.getByTestId('order-status').getByText('paid').waitFor();
    const history = page.getByTestId('status-history');
    await history.getByText('order.paid').waitFor();
    expect(await history.getByRole('listitem').count()).toBe(2);
    expect((await api('GET', `/v1/orders/${orderIds[20]}`)).status).toBe('paid');
    await record(page, 'order-detail', audit);

    // Refunding asks first: dismissed, nothing changes; confirmed, the order is refunded.
    await page.getByRole('button', { name: 'Refund', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel', exact: true }).click();
    expect((await api('GET', `/v1/orders/${orderIds[20]}`)).status).toBe('paid');
    await page.getByRole('button', { name: 'Refund', exact: true }).click();
    await record(page, 'order-refund-confirm', audit);
    await page.getByRole('dialog').getByRole('button', { name: 'Refund' }).click();
    await page.getByTestId('order-status').getByText('refunded').waitFor();
    await history.getByText('order.refunded').waitFor();
    await page.getByText('refunded is final').waitFor();
  });

  it("shows the API's 409 and its request id when the order moved meanwhile; filters by status", async () => {
    await page.goto(at(`/orders/${orderIds[19]}`));
    await page.getByRole('button', { name: 'Cancel order' }).waitFor();
    // Paid behind the page's back: the page still offers cancel, the API refuses it.
    await api('POST', `/v1/orders/${orderIds[19]}/pay`);
    await page.getByRole('button', { name: 'Cancel order' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel order' }).click();
    const alert = page.getByRole('alert');
    await alert.getByText(/409 INVALID_STATE/).waitFor();
    expect(await alert.textContent()).toContain('its status is paid');
    expect(await alert.getByTestId('request-id').textContent()).toMatch(/^req_/);
    // The page now shows the order as it is, with the actions of paid.
    await page.getByTestId('order-status').getByText('paid').waitFor();
    await page.getByRole('button', { name: 'Mark fulfilled' }).waitFor();
    await record(page, 'order-refused', audit);
    expect((await api('GET', `/v1/orders/${orderIds[19]}`)).status).toBe('paid');

    await nav('Orders');
    await page.getByLabel('Status').selectOption('refunded');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => page.url()).toContain('status=refunded');
    await expect.poll(() => page.getByTestId('orders').getByRole('row').count()).toBe(2);
    await page.getByTestId('orders').getByText(orderIds[20]).waitFor();
  });

  let endpointId = '';
  let retried = '';

  it('shows a delivery that failed, then succeeded, as two attempts, newest first', async () => {
    endpointId = (await addEndpoint(t, receiver.url, ['webhook.ping'])).id;
    receiver.respond((_, index) => (index === 0 ? { status: 500, body: 'down for maintenance' } : { status: 200, body: 'ok' }));
    retried = (await api('POST', `/v1/webhooks/endpoints/${endpointId}/send-test-event`)).deliveryId;
    await eventually(async () => (await api('GET', `/v1/webhooks/deliveries/${retried}`)).delivery.status === 'success');

    await page.goto(at(`/deliveries/${retried}`));
    await heading(page, /webhook\.ping/);
    const attempts = page.getByTestId('attempt');
    await expect.poll(() => attempts.count()).toBe(2);
    await attempts.nth(0).getByText('Attempt 2', { exact: true }).waitFor();
    await attempts.nth(0).getByText('HTTP 200').waitFor();
    await attempts.nth(1).getByText('Attempt 1', { exact: true }).waitFor();
    // Its status, and its error (the same words for a plain 500).
    await attempts.nth(1).getByText('HTTP 500').first().waitFor();
    expect(await attempts.nth(1).getByText('HTTP 500', { exact: true }).count()).toBe(2);
    await attempts.nth(1).getByText('failed', { exact: true }).waitFor();
    await attempts.nth(1).getByText('Request and response of attempt 1').click();
    await attempts.nth(1).getByLabel('Body of the answer to attempt 1').getByText('down for maintenance').waitFor();
    await attempts.nth(1).getByRole('rowheader', { name: 'webhook-signature' }).waitFor();
    await record(page, 'delivery-attempts', audit);
  });

  it("shows an endpoint's success rate and latency from the stats route, for each window", async () => {
    // Two more pings that succeed at once: 4 attempts, 3 of them successful.
    for (let i = 0; i < 2; i++) {
      const id = (await api('POST', `/v1/webhooks/endpoints/${endpointId}/send-test-event`)).deliveryId;
      await eventually(async () => (await api('GET', `/v1/webhooks/deliveries/${id}`)).delivery.status === 'success');
    }
    const stats = await api('GET', `/v1/webhooks/endpoints/${endpointId}/stats?window=1h`);
    expect(stats).toMatchObject({ attempts: 4, successes: 3, successRate: 0.75 });

    await nav('Endpoints');
    await heading(page, 'Endpoints');
    const row = page.getByRole('row').filter({ hasText: receiver.url });
    await expect.poll(() => row.getByTestId('stats-line').textContent()).toMatch(/^75% of 4 attempts succeeded\s*p50 \d+ ms · p95 \d+ ms · p99 \d+ ms$/);
    await record(page, 'endpoints-stats', audit);

    await row.getByRole('link', { name: receiver.url }).click();
    const health = page.getByTestId('endpoint-health');
    await health.getByTestId('success-rate').getByText('75%').waitFor();
    await health.getByRole('img', { name: /4 attempts in the 24h window, 3 succeeded \(75%\)/ }).waitFor();
    await health.getByRole('img', { name: /Latency of the latest attempt of 3 deliveries/ }).waitFor();
    await record(page, 'endpoint-health', audit);
    await health.getByRole('button', { name: 'Last hour' }).click();
    await expect.poll(() => page.url()).toContain('window=1h');
    await health.getByRole('img', { name: /4 attempts in the 1h window/ }).waitFor();
    expect(await health.getByRole('button', { name: 'Last hour' }).getAttribute('aria-pressed')).toBe('true');
    await health.getByRole('button', { name: 'Last 7 days' }).click();
    await health.getByRole('img', { name: /4 attempts in the 7d window/ }).waitFor();
    await health.getByTestId('success-rate').getByText('75%').waitFor();

    // The endpoint's throttle, as the workers write it when a receiver asks them to slow down.
    expect(await page.getByTestId('endpoint-throttle').textContent()).toBe('none');
    await t.ctx.db.query('UPDATE webhook_endpoints SET throttle_share = 2, throttled_since = now() WHERE id = $1', [endpointId]);
    await page.reload();
    await expect.poll(() => page.getByTestId('endpoint-throttle').textContent()).toMatch(/^slowed down to 2 attempts at a time since .+: it answered 429, 502, 503 or 504/);
    await t.ctx.db.query('UPDATE webhook_endpoints SET throttle_share = NULL, throttled_since = NULL WHERE id = $1', [endpointId]);
  });

  it('tails events live: one created through the API shows up; a type filter, pause and resume, clear; the stream stops on leaving', async () => {
    await nav('Live tail');
    await heading(page, 'Live tail');
    const state = page.getByTestId('tail-state');
    await state.getByText('live', { exact: true }).waitFor();
    const product = (await api('POST', '/v1/products', { name: 'Tailed hat' })).id;
    const tail = page.getByTestId('tail');
    await tail.getByRole('row').filter({ hasText: product }).getByRole('cell', { name: 'product.created', exact: true }).waitFor();
    await record(page, 'live-tail', audit);

    // Only order events: a product passes by unseen, an order shows up.
    await page.getByLabel(/Event type/).fill('order.*');
    await page.getByRole('button', { name: 'Follow' }).click();
    await expect.poll(() => page.url()).toContain('type=order.*');
    await page.getByTestId('empty').waitFor();
    await state.getByText('live', { exact: true }).waitFor();
    await api('POST', '/v1/products', { name: 'Unseen hat' });
    const order = await placeOrder();
    await tail.getByRole('row').filter({ hasText: order }).getByRole('cell', { name: 'order.created', exact: true }).waitFor();
    expect(await tail.getByRole('cell', { name: 'product.created' }).count()).toBe(0);

    // Paused, the stream is closed; resumed, it picks up after the last event received.
    await page.getByRole('button', { name: 'Pause' }).click();
    await state.getByText('paused', { exact: true }).waitFor();
    await eventually(() => streams.ended === streams.started);
    await api('POST', `/v1/orders/${order}/pay`);
    await page.getByRole('button', { name: 'Resume' }).click();
    await tail.getByRole('row').filter({ hasText: 'order.paid' }).waitFor();
    expect(await tail.getByRole('row').filter({ hasText: order }).count()).toBe(2);

    await page.getByRole('button', { name: 'Clear' }).click();
    await page.getByTestId('empty').getByText('Waiting for events').waitFor();

    // A type outside the catalog: the API's refusal, and no retrying.
    await page.getByLabel(/Event type/).fill('nothing.real');
    await page.getByRole('button', { name: 'Follow' }).click();
    await page.getByRole('alert').getByText(/400 VALIDATION/).waitFor();
    await state.getByText('stopped', { exact: true }).waitFor();
    await record(page, 'live-tail-refused', audit);

    await page.getByLabel(/Event type/).fill('');
    await page.getByRole('button', { name: 'Follow' }).click();
    await state.getByText('live', { exact: true }).waitFor();
    expect(streams.started).toBeGreaterThanOrEqual(4);
    await nav('Orders');
    await heading(page, 'Orders');
    await eventually(() => streams.ended === streams.started);
  });

  it('gives a Viewer on a phone the orders and the live tail, without order actions', async () => {
    const viewer = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const phone = await viewer.newPage();
    watch(phone, seen);
    const token = userOf(t.demo, 'viewer').token;
    secrets.push(token);
    await phone.goto(at('/'));
    await phone.getByLabel('Or paste a personal access token').fill(token);
    await phone.getByRole('button', { name: 'Sign in' }).click();
    await heading(phone, 'Store');
    await phone.goto(at(`/orders/${orderIds[18]}`));
    await phone.getByTestId('order-status').getByText('pending').waitFor();
    await phone.getByTestId('status-history').getByText('order.created').waitFor();
    for (const name of ['Mark paid', 'Cancel order', 'Mark fulfilled', 'Refund']) expect(await phone.getByRole('button', { name, exact: true }).count(), name).toBe(0);
    await record(phone, 'order-detail-viewer-phone', audit);

    await phone.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Live tail' }).click();
    await phone.getByTestId('tail-state').getByText('live', { exact: true }).waitFor();
    const product = (await api('POST', '/v1/products', { name: 'Phone hat' })).id;
    await phone.getByTestId('tail').getByRole('cell', { name: product }).waitFor();
    await record(phone, 'live-tail-viewer-phone', audit);

    await phone.goto(at(`/deliveries/${retried}`));
    await expect.poll(() => phone.getByTestId('attempt').count()).toBe(2);
    await record(phone, 'delivery-attempts-phone', audit);
    await viewer.close();
  });

  it('leaked nothing: no code or token in any URL asked for (the stream included) or in the service log; no CSP refusal or script error', () => {
    expect(seen.urls.some((url) => url.includes('/v1/events/stream'))).toBe(true);
    expect(log.text).toContain('/v1/events/stream');
    expectNothingLeaked(seen, log, secrets);
    expect(Object.keys(audit).length).toBeGreaterThanOrEqual(12);
    expect(Object.values(audit).every((n) => n === 0)).toBe(true);
  });
});
