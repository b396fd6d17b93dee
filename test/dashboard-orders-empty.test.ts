import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { heading, record, signInToStore, type PageWatch } from './helpers/dashboard.js';
import { closeJourney, expectNothingLeaked, journeyShortcuts, openOwnerPage, startDashboardApp } from './helpers/dashboard-journey.js';
import type { LiveApp } from './helpers/live.js';
import { LogCapture } from './helpers/log.js';
import { missing } from './helpers/services.js';

/**
 * The dashboard's orders list before any order, in Debian's Chromium against a live service (as
 * test/dashboard-pages.test.ts), screenshotted and checked with axe-core. Once it is over: no token or
 * code in a URL the browser asked for or in the service's log, and no CSP refusal or script error.
 */
describe.skipIf(missing('chromium'))('dashboard pages in Chromium', { timeout: 180_000 }, () => {
  let t: LiveApp;
  let browser: Browser;
  let page: Page;
  const log = new LogCapture();
  const seen: PageWatch = { urls: [], problems: [] };
  const secrets: string[] = [];
  const audit: Record<string, number> = {};

  const { nav } = journeyShortcuts(() => t, () => page);

  beforeAll(async () => {
    t = await startDashboardApp(log);
    ({ browser, page } = await openOwnerPage(seen));
    await signInToStore(page, t, secrets);
  }, 180_000);
  afterAll(async () => {
    await closeJourney({ browser, t });
  });

  it('tells a newcomer with no order how to create one', async () => {
    await nav('Orders');
    await heading(page, 'Orders');
    const empty = page.getByTestId('empty');
    await empty.getByText('No orders yet').waitFor();
    expect(await empty.getByLabel('Create an order with curl').textContent()).toContain(`curl -X POST ${t.base}/v1/orders`);
    await record(page, 'orders-empty', audit);
  });

  it('leaked nothing: no secret in any URL asked for or in the service log; no CSP refusal or script error', () => {
    expectNothingLeaked(seen, log, secrets);
  });
});
