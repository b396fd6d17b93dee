import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDemoData } from '../src/cli/demo-data.js';
import { createSignInCode } from '../src/account/sign-in-store.js';
import { DASHBOARD_DIST } from '../src/server/dashboard.js';
import { ManualClock, userOf } from './helpers/app.js';
import { launchChromium } from './helpers/browser.js';
import { heading, record } from './helpers/dashboard.js';
import { addEndpoint } from './helpers/delivery.js';
import { startLiveApp, type LiveApp } from './helpers/live.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { Tour } from './helpers/tour.js';
import { missing } from './helpers/services.js';

/**
 * Every page of the dashboard, visited as a person would (pausing on each, an endpoint's page left
 * open for minutes) and as fast as the pages answer, against the service's default personal-token
 * limit (120 a minute): no request is refused. The pauses pass on a ManualClock (the service's
 * time) and Playwright's fake clock (the page's) in step, so the page polls as it would and the rate
 * limiter's minute slides as it would, in seconds of real time. No delivery worker runs: the
 * endpoint's deliveries stay pending, the case where the page used to poll most.
 */
describe.skipIf(missing('chromium'))('a tour of the dashboard within the rate limit', { timeout: 300_000 }, () => {
  let t: LiveApp;
  let browser: Browser;
  let receiver: Receiver;
  let endpointId = '';
  const clock = new ManualClock(Date.now());
  const audit: Record<string, number> = {};

  beforeAll(async () => {
    if (!existsSync(join(DASHBOARD_DIST, 'index.html'))) throw new Error('The dashboard is not built: run npm run build first.');
    t = await startLiveApp({ clock, config: { allowPrivateTargets: true } });
    receiver = await startReceiver();
    const store = t.demo.workspaces[0];
    await t.ctx.db.tx((q) => seedDemoData(q, t.ctx.secrets, store.id, clock.now()));
    endpointId = (await addEndpoint(t, receiver.url, ['product.*', 'order.*'])).id;
    for (const name of ['Cup', 'Saucer', 'Tray']) expect((await t.call(store.apiKey, 'POST', '/v1/products', { name })).statusCode).toBe(201);
    browser = await launchChromium();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await t?.close();
  });

  /** A fresh browser and session (a rate-limit count of its own), its requests counted by `tour`. */
  async function open(): Promise<{ page: Page; tour: Tour }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.setDefaultTimeout(45_000);
    const tour = new Tour(page, clock);
    await tour.start();
    const { code } = await createSignInCode(t.ctx.db, userOf(t.demo, 'owner').id, clock.now());
    await page.goto(`${t.base}/dashboard/#code=${code}`);
    await heading(page, 'Store', 120_000);
    return { page, tour };
  }

  /** Every page, in a person's order; `pause` is how long they look at each (ms), scaled per page. */
  async function visitEverything(page: Page, pause: (ms: number) => Promise<void>): Promise<void> {
    const nav = (label: string) => page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: label, exact: true }).click();
    await pause(20_000);
    await nav('Products');
    await page.getByRole('cell', { name: /^Espresso beans/ }).waitFor();
    await pause(30_000);
    // An address typed in, as a person following the docs would: a new page load.
    await page.goto(`${t.base}/dashboard/orders?status=pending`);
    await page.getByRole('link', { name: /^ord_/ }).first().click();
    await page.getByTestId('status-history').getByText('order.created').waitFor();
    await pause(30_000);
    await nav('Events');
    await page.getByRole('link', { name: /^evt_/ }).first().click();
    await page.getByLabel('Event body').waitFor();
    await pause(30_000);
    await nav('Live tail');
    await heading(page, 'Live tail');
    await pause(60_000);
    await nav('Endpoints');
    await page.getByRole('link', { name: receiver.url }).click();
    await page.getByTestId('deliveries').getByRole('link', { name: /^whd_/ }).first().waitFor();
    // Left open on an endpoint nothing happens to, for a few minutes.
    await pause(240_000);
    await page.getByTestId('deliveries').getByRole('link', { name: /^whd_/ }).first().click();
    await page.getByText('Attempts', { exact: true }).first().waitFor();
    await pause(30_000);
    await nav('Deliveries');
    await page.getByTestId('deliveries').waitFor();
    await pause(20_000);
    await nav('API keys');
    await heading(page, 'API keys');
    await pause(20_000);
    await nav('Notifications');
    await heading(page, 'Notifications');
    await pause(20_000);
    await nav('Overview');
    await heading(page, 'Store');
    await page.getByTestId('workspace-switcher').selectOption({ label: 'Acme Inc. / Staging' });
    await heading(page, 'Staging');
    await pause(20_000);
    await page.getByTestId('workspace-switcher').selectOption({ label: 'Acme Inc. / Store' });
    await heading(page, 'Store');
    await pause(60_000);
  }

  it("at a person's pace, with an endpoint's page left open, stays well within the limit", async () => {
    const { page, tour } = await open();
    await visitEverything(page, (ms) => tour.dwell(ms));
    // What every page shares was asked for once in its 5 minutes, the typed address included.
    const asked = (path: string) => tour.answers.filter((a) => a.path.startsWith(path)).length;
    expect(tour.answers.filter((a) => a.path.startsWith('/v1/organizations') && a.atMs < tour.answers[0].atMs + 300_000)).toHaveLength(1);
    expect(asked('/v1/webhooks/endpoints/event-types')).toBe(1);
    // One request for the endpoints list and its health: no stats request per endpoint.
    expect(asked('/v1/webhooks/endpoints?')).toBeGreaterThanOrEqual(1);
    expect(tour.answers.filter((a) => /\/endpoints\/whe_\w+\/stats/.test(a.path)).length).toBe(1);
    // A reload asks afresh.
    const before = asked('/v1/organizations');
    await page.reload();
    await heading(page, 'Store');
    await tour.settle();
    expect(asked('/v1/organizations')).toBe(before + 1);
    const minutes = (clock.now().getTime() - tour.answers[0].atMs) / 60_000;
    console.log(`person's tour: ${tour.answers.length} requests in ${minutes.toFixed(1)} min, busiest minute ${tour.busiest()}`, tour.byRoute());
    expect(tour.refused()).toEqual([]);
    expect(tour.busiest()).toBeLessThanOrEqual(20);
    await record(page, 'tour-end', audit);
    await page.context().close();
  });

  it('as fast as the pages answer, stays within the limit', async () => {
    const { page, tour } = await open();
    await visitEverything(page, () => tour.settle());
    console.log(`fast tour: ${tour.answers.length} requests, busiest minute ${tour.busiest()}`, tour.byRoute());
    expect(tour.refused()).toEqual([]);
    expect(tour.busiest()).toBeLessThanOrEqual(40);
    await page.context().close();
  });

  it("an endpoint's page asks nothing while its tab is hidden, and looks at once when it is shown again", async () => {
    const { page, tour } = await open();
    await page.goto(`${t.base}/dashboard/endpoints/${endpointId}`);
    await page.getByTestId('deliveries').getByRole('link', { name: /^whd_/ }).first().waitFor();
    await tour.dwell(10_000);
    const polls = () => tour.answers.filter((a) => a.path.startsWith('/v1/webhooks/deliveries?')).length;
    const shown = (state: 'hidden' | 'visible') =>
      page.evaluate((value) => {
        Object.defineProperty(document, 'visibilityState', { value, configurable: true });
        document.dispatchEvent(new Event('visibilitychange'));
      }, state);
    await shown('hidden');
    const before = polls();
    await tour.dwell(180_000);
    expect(polls()).toBe(before);
    await shown('visible');
    await tour.settle();
    expect(polls()).toBe(before + 1);
    await page.context().close();
  });

  it('past the limit keeps the header and the menu, says why, and fills the page in after Retry-After', async () => {
    const { page, tour } = await open();
    const token = JSON.parse((await page.evaluate(() => sessionStorage.getItem('svc.dashboard.session')))!).token;
    // The session's whole minute spent elsewhere (as by other tabs), at the page's moment.
    let status = 200;
    for (let i = 0; i < 200 && status !== 429; i++) status = (await t.call(token, 'GET', '/v1/me')).statusCode;
    expect(status).toBe(429);

    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Products', exact: true }).click();
    const notice = page.getByTestId('rate-limited');
    await notice.getByText(/the service asked for a pause/).waitFor();
    await page.getByTestId('workspace-switcher').waitFor();
    expect(await page.getByRole('navigation', { name: 'Sections' }).getByRole('link').count()).toBeGreaterThanOrEqual(8);
    expect(await page.getByRole('alert').count()).toBe(0);
    await record(page, 'rate-limited', audit);
    const refused = tour.refused().find((a) => a.path.startsWith('/v1/products'))!;
    expect(refused).toBeDefined();

    // A minute later (on both clocks) the same request is sent again and answered.
    await tour.dwell(61_000);
    await page.getByRole('cell', { name: /^Espresso beans/ }).waitFor();
    expect(await notice.count()).toBe(0);
    const answered = tour.answers.filter((a) => a.path.startsWith('/v1/products') && a.status === 200);
    expect(answered).toHaveLength(1);
    expect(answered[0].atMs - refused.atMs).toBeGreaterThanOrEqual(59_000);
    expect(Object.values(audit).every((n) => n === 0)).toBe(true);
    await page.context().close();
  });
});
