import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDemoData, type DemoSample } from '../src/cli/demo-data.js';
import type { DeliveryWorker } from '../src/engine/delivery/worker.js';
import { heading, record, signInToStore, type PageWatch } from './helpers/dashboard.js';
import { closeJourney, expectNothingLeaked, journeyShortcuts, openOwnerPage, startDashboardApp } from './helpers/dashboard-journey.js';
import { addEndpoint, eventually, testWorker } from './helpers/delivery.js';
import type { LiveApp } from './helpers/live.js';
import { LogCapture } from './helpers/log.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { missing } from './helpers/services.js';

/**
 * The delivery log as a newcomer reads it, in Chromium: at 1280 px the list fits its area, a row is
 * one line, endpoints go by their URL and ids look like links; a replay links the event it sends
 * again (its own event id is synthetic) and settles on its page by itself; after Trigger the
 * endpoint's deliveries are right below; on a phone (390 x 844) a delivery's headers and an order's
 * lines fit; a product's badge agrees with its action.
 */
describe.skipIf(missing('chromium'))('dashboard deliveries', { timeout: 180_000 }, () => {
  let t: LiveApp;
  let browser: Browser;
  let page: Page;
  let worker: DeliveryWorker;
  let receiver: Receiver;
  let sample: DemoSample;
  let endpointId = '';
  const log = new LogCapture();
  const seen: PageWatch = { urls: [], problems: [] };
  const secrets: string[] = [];
  const audit: Record<string, number> = {};
  const { apiKey, at, nav } = journeyShortcuts(() => t, () => page);
  const api = async (method: string, path: string, body?: unknown) => (await t.call(apiKey(), method, path, body)).json();

  beforeAll(async () => {
    t = await startDashboardApp(log);
    sample = await t.ctx.db.tx((q) => seedDemoData(q, t.ctx.secrets, t.demo.workspaces[0].id, t.clock.now()));
    receiver = await startReceiver();
    worker = testWorker(t);
    await worker.start();
    ({ id: endpointId } = await addEndpoint(t, `${receiver.url}/hooks/from-svc`, ['product.*', 'order.*']));
    for (const name of ['Mug', 'Plate', 'Bowl']) await api('POST', '/v1/products', { name, price: { amount: 1200, currency: 'EUR' } });
    await eventually(async () => (await api('GET', `/v1/webhooks/deliveries?endpointId=${endpointId}&status=success`)).data.length === 3, 60_000);
    ({ browser, page } = await openOwnerPage(seen));
    await signInToStore(page, t, secrets);
  }, 180_000);
  afterAll(() => closeJourney({ browser, worker, receiver, t }));

  it('fits the delivery log in its area at 1280 px: one line a row, endpoints by URL, ids that look like links', async () => {
    await nav('Deliveries');
    await heading(page, 'Deliveries');
    const table = page.getByTestId('deliveries');
    await table.getByText('success').first().waitFor();
    const shape = await table.evaluate((element) => ({
      overflow: element.parentElement!.scrollWidth - element.parentElement!.clientWidth,
      rows: [...element.querySelectorAll('tbody tr')].map((row) => row.getBoundingClientRect().height),
      created: element.querySelector('tbody td:last-child')!.getBoundingClientRect().right,
    }));
    expect(shape.overflow).toBeLessThanOrEqual(1);
    expect(shape.created).toBeLessThanOrEqual(1280);
    expect(Math.max(...shape.rows)).toBeLessThan(60);
    expect(await page.getByTestId('scroll-hint').count()).toBe(0);
    // The endpoint by its URL, never a bare whe_ id.
    const endpoint = table.getByRole('link', { name: /hooks\/from-svc/ }).first();
    expect(await endpoint.textContent()).toBe(`${receiver.url.replace('http://', '')}/hooks/from-svc`);
    expect(await table.getByText(/^whe_/).count()).toBe(0);
    // An id in a link has the link's colour and is underlined.
    const look = await table.getByRole('link', { name: /^whd_/ }).first().evaluate((a) => {
      const code = a.querySelector('code')!;
      return { link: getComputedStyle(a).color, code: getComputedStyle(code).color, line: getComputedStyle(code).textDecorationLine };
    });
    expect(look.code).toBe(look.link);
    expect(look.line).toBe('underline');
    await record(page, 'deliveries-laptop', audit);
  });

  it("links a replay to the delivery it copies and that delivery's event, and shows it settle without a refresh", async () => {
    const [original] = (await api('GET', `/v1/webhooks/deliveries?endpointId=${endpointId}&eventType=product.created`)).data;
    await page.goto(at(`/deliveries/${original.id}`));
    await heading(page, /product\.created/);
    const before = receiver.requests.length;
    await page.getByRole('button', { name: 'Replay' }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/dashboard/deliveries/') && !url.pathname.endsWith(original.id));
    const replayId = page.url().split('/').pop()!;
    await eventually(() => receiver.requests.length > before, 30_000);
    const received = Date.now();
    await page.locator('h1').getByText('success', { exact: true }).waitFor({ timeout: 10_000 });
    expect(Date.now() - received).toBeLessThan(2500);

    const replay = (await api('GET', `/v1/webhooks/deliveries/${replayId}`)).delivery;
    expect(replay).toMatchObject({ replayOf: original.id, sourceEventId: original.eventId });
    expect(replay.eventId).not.toBe(original.eventId);
    const facts = page.locator('dl.facts');
    expect(await facts.getByRole('link', { name: original.eventId }).getAttribute('href')).toBe(`/dashboard/events/${original.eventId}`);
    expect(await facts.getByRole('link', { name: original.id }).getAttribute('href')).toBe(`/dashboard/deliveries/${original.id}`);
    expect(await facts.getByRole('link', { name: replay.eventId }).count()).toBe(0);
    await record(page, 'delivery-replay', audit);
    await facts.getByRole('link', { name: original.eventId }).click();
    await page.getByText(original.eventId).first().waitFor();
    expect(await page.getByText(/No such event/).count()).toBe(0);

    // In the list, the replay's event type points at the delivery it copies, not at a synthetic event.
    await nav('Deliveries');
    const row = page.getByTestId('deliveries').getByRole('row').filter({ hasText: replayId });
    expect(await row.getByRole('link', { name: 'replay' }).getAttribute('href')).toBe(`/dashboard/deliveries/${original.id}`);
    expect(await row.locator(`a[href$="${replay.eventId}"]`).count()).toBe(0);
  });

  it('shows the deliveries right under Trigger on an endpoint page', async () => {
    await page.goto(at(`/endpoints/${endpointId}`));
    const trigger = page.getByTestId('trigger');
    await trigger.getByLabel('Event type').selectOption('product.created');
    await trigger.getByRole('button', { name: 'Trigger' }).click();
    await trigger.getByTestId('triggered').waitFor();
    const button = (await trigger.getByRole('button', { name: 'Trigger' }).boundingBox())!;
    const list = (await page.getByTestId('endpoint-deliveries').boundingBox())!;
    // Below the button, within the same screenful (800 px), not under the charts and the recovery form.
    expect(list.y).toBeGreaterThan(button.y);
    expect(list.y - button.y).toBeLessThan(800);
    expect(list.y).toBeLessThan((await page.getByTestId('endpoint-health').boundingBox())!.y);
  });

  it('says a deactivated product is inactive beside its Activate button', async () => {
    const [product] = sample.products;
    await api('PATCH', `/v1/products/${product.id}`, { active: false });
    await nav('Products');
    const row = page.getByRole('row').filter({ hasText: product.name });
    await row.getByRole('button', { name: 'Activate' }).waitFor();
    expect(await row.locator('mark.badge').textContent()).toBe('inactive');
    expect(await page.locator('mark.badge', { hasText: 'disabled' }).count()).toBe(0);
  });

  it('fits a delivery and an order on a phone: header names whole, line items without sideways scrolling', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    const [delivered] = (await api('GET', `/v1/webhooks/deliveries?endpointId=${endpointId}&status=success`)).data;
    await page.goto(at(`/deliveries/${delivered.id}`));
    const name = page.getByRole('rowheader', { name: 'webhook-signature' });
    await name.waitFor();
    const box = (await name.boundingBox())!;
    // One line of text, as wide as the name needs (it was a 28 px column, a letter a line).
    expect(box.width).toBeGreaterThan(100);
    expect(box.height).toBeLessThan(40);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await record(page, 'phone-delivery', audit);

    await page.goto(at(`/orders/${sample.order.id}`));
    const lines = page.getByTestId('line-items');
    await lines.waitFor();
    expect(await lines.evaluate((table) => table.parentElement!.scrollWidth - table.parentElement!.clientWidth)).toBeLessThanOrEqual(1);
    expect(await page.getByTestId('scroll-hint').count()).toBe(0);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await record(page, 'phone-order', audit);
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('had no serious accessibility violation, leaked nothing and had no script error', () => {
    expect(Object.values(audit).every((n) => n === 0)).toBe(true);
    expectNothingLeaked(seen, log, secrets);
  });
});
