import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { expect } from 'vitest';
import { DASHBOARD_DIST } from '../../src/server/dashboard.js';
import { loggerOptions } from '../../src/http/logger.js';
import type { DeliveryWorker } from '../../src/engine/delivery/worker.js';
import { launchChromium } from './browser.js';
import { watch, type PageWatch } from './dashboard.js';
import { startLiveApp, type LiveApp } from './live.js';
import type { LogCapture } from './log.js';
import type { Receiver } from './receiver.js';

/**
 * The live service of the dashboard journeys in Chromium, logging at `info` into `log`: private
 * targets allowed (receivers listen on 127.0.0.1), a failed delivery retried once after 100 ms, due
 * deliveries polled every 200 ms. Refuses to start when the dashboard is not built.
 */
export async function startDashboardApp(log: LogCapture): Promise<LiveApp> {
  if (!existsSync(join(DASHBOARD_DIST, 'index.html'))) throw new Error('The dashboard is not built: run npm run build first.');
  return startLiveApp({ config: { allowPrivateTargets: true, retryScheduleMs: [100], pollIntervalMs: 200, rateLimitPat: 10_000 }, logger: loggerOptions('info', log) });
}

/** Debian's Chromium with the owner's page, 1280 by 800, watched into `seen`. */
export async function openOwnerPage(seen: PageWatch): Promise<{ browser: Browser; owner: BrowserContext; page: Page }> {
  const browser = await launchChromium();
  const owner = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await owner.newPage();
  watch(page, seen);
  return { browser, owner, page };
}

/** Closes what a journey opened, the browser first; a part is missing when it was not opened. */
export async function closeJourney(parts: { browser?: Browser; worker?: DeliveryWorker; receiver?: Receiver; t?: LiveApp }): Promise<void> {
  await parts.browser?.close();
  await parts.worker?.stop();
  await parts.receiver?.close();
  await parts.t?.close();
}

/**
 * Shortcuts of a journey on the app `app()` in the owner's page `page()` (functions, as a beforeAll
 * opens both): the first demo workspace's API key, the URL of a dashboard path, and a click on a
 * section of the menu.
 */
export function journeyShortcuts(app: () => LiveApp, page: () => Page) {
  return {
    apiKey: () => app().demo.workspaces[0].apiKey,
    at: (path: string) => `${app().base}/dashboard${path}`,
    nav: async (label: string) => page().getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: label, exact: true }).click(),
  };
}

/**
 * What the last test of every journey file checks: no CSP refusal or script
 * error on any page, and none of `secrets` in a URL the browser asked for or in the service's log.
 */
export function expectNothingLeaked(seen: PageWatch, log: LogCapture, secrets: string[]): void {
  expect(seen.problems).toEqual([]);
  const logged = log.text;
  for (const secret of secrets) {
    expect(seen.urls.filter((url) => url.includes(secret)), 'a URL').toEqual([]);
    expect(logged.includes(secret), 'the log').toBe(false);
  }
}
