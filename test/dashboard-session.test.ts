import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSignInCode } from '../src/account/sign-in-store.js';
import { userOf } from './helpers/app.js';
import { heading, signInToStore, watch, type PageWatch } from './helpers/dashboard.js';
import { closeJourney, expectNothingLeaked, openOwnerPage, startDashboardApp } from './helpers/dashboard-journey.js';
import type { LiveApp } from './helpers/live.js';
import { LogCapture } from './helpers/log.js';
import { missing } from './helpers/services.js';

/**
 * Signing in as a newcomer does, in Chromium: a sign-in link pasted into a tab that already shows
 * the sign-in page (only the fragment changes) signs in; a new tab of the same browser is signed in
 * while another is open, a tab of another browser profile is not; signing out signs out every tab.
 */
describe.skipIf(missing('chromium'))('dashboard sessions across tabs', { timeout: 180_000 }, () => {
  let t: LiveApp;
  let browser: Browser;
  let owner: BrowserContext;
  let page: Page;
  const log = new LogCapture();
  const seen: PageWatch = { urls: [], problems: [] };
  const secrets: string[] = [];
  const at = (path: string) => `${t.base}/dashboard${path}`;
  const newCode = async () => {
    const { code } = await createSignInCode(t.ctx.db, userOf(t.demo, 'owner').id, t.clock.now());
    secrets.push(code);
    return code;
  };

  beforeAll(async () => {
    t = await startDashboardApp(log);
    ({ browser, owner, page } = await openOwnerPage(seen));
  }, 180_000);
  afterAll(() => closeJourney({ browser, t }));

  it('signs in when a link is pasted into the open sign-in page, without a reload', async () => {
    await page.goto(at('/'));
    await heading(page, 'Sign in to svc', 120_000);
    await page.evaluate(() => ((window as unknown as { before: number }).before = 1));
    // The same document, another fragment: the browser fires hashchange and loads nothing.
    await page.goto(at(`/#code=${await newCode()}`));
    await heading(page, 'Store', 60_000);
    expect(await page.evaluate(() => (window as unknown as { before?: number }).before)).toBe(1);
    expect(page.url()).toBe(at('/'));
    secrets.push(JSON.parse((await page.evaluate(() => sessionStorage.getItem('svc.dashboard.session')))!).token);
  });

  it('carries the session to a new tab of the same browser, which stays on the page it opened', async () => {
    const tab = await owner.newPage();
    watch(tab, seen);
    await tab.goto(at('/endpoints'));
    await heading(tab, 'Endpoints', 60_000);
    expect(tab.url()).toBe(at('/endpoints'));
    expect(await tab.getByText('Sign in to svc').count()).toBe(0);

    // Another browser profile shares nothing: it is asked to sign in.
    const stranger = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const other = await stranger.newPage();
    watch(other, seen);
    await other.goto(at('/endpoints'));
    await heading(other, 'Sign in to svc', 60_000);
    await stranger.close();

    // Signing out in the first tab signs out the second, and a tab opened after is signed out too.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await heading(page, 'Sign in to svc');
    await heading(tab, 'Sign in to svc');
    await tab.getByText('You are signed out').waitFor();
    const later = await owner.newPage();
    watch(later, seen);
    await later.goto(at('/endpoints'));
    await heading(later, 'Sign in to svc', 60_000);
    await later.close();
    await tab.close();
  });

  it('signs a signed-in tab in again with a new link pasted into it', async () => {
    await signInToStore(page, t, secrets);
    const first = await page.evaluate(() => sessionStorage.getItem('svc.dashboard.session'));
    await page.goto(at(`/#code=${await newCode()}`));
    await expect.poll(() => page.evaluate(() => sessionStorage.getItem('svc.dashboard.session')), { timeout: 30_000 }).not.toBe(first);
    await heading(page, 'Store', 60_000);
    secrets.push(JSON.parse((await page.evaluate(() => sessionStorage.getItem('svc.dashboard.session')))!).token);
  });

  it('leaked no code or token into a URL or the log, and had no script error', () => {
    expectNothingLeaked(seen, log, secrets);
  });
});
