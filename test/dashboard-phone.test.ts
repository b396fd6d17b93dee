import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDemoData } from '../src/cli/demo-data.js';
import { DASHBOARD_DIST } from '../src/server/dashboard.js';
import { launchChromium } from './helpers/browser.js';
import { heading, record, signInToStore, watch, type PageWatch } from './helpers/dashboard.js';
import { addEndpoint } from './helpers/delivery.js';
import { startLiveApp, type LiveApp } from './helpers/live.js';
import { missing } from './helpers/services.js';

/**
 * The dashboard on a phone (390 px wide, as an iPhone 14): the header and the section menu fit, the
 * person's name and role are on screen, lists become a card per row that fits the width, and a
 * table wider than its screen says it scrolls. axe-core on each page.
 */
describe.skipIf(missing('chromium'))('dashboard on a phone', { timeout: 180_000 }, () => {
  let t: LiveApp;
  let browser: Browser;
  let page: Page;
  const seen: PageWatch = { urls: [], problems: [] };
  const audit: Record<string, number> = {};
  const nav = (label: string) => page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: label, exact: true }).click();

  /** Nothing on the page is wider than the screen: no sideways scrolling of the page itself. */
  const fitsTheWidth = async () => expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);

  /** Every row of the list is a card: laid out as a block, each value under its column's name, nothing overflowing. */
  const listIsCards = async (testId?: string) => {
    const table = testId ? page.getByTestId(testId) : page.locator('table.cards').first();
    await table.waitFor();
    const shape = await table.evaluate((element) => {
      const row = element.querySelector('tbody tr')!;
      const cell = row.querySelector('td')!;
      const wrap = element.parentElement!;
      return {
        row: getComputedStyle(row).display,
        label: getComputedStyle(cell, '::before').content,
        header: element.querySelector('th')!.textContent,
        overflow: wrap.scrollWidth - wrap.clientWidth,
      };
    });
    expect(shape.row).toBe('block');
    // The column's name is shown beside each value, and not read out twice (its header still is).
    expect(shape.label.startsWith(`"${shape.header}"`)).toBe(true);
    expect(await table.getByRole('cell').first().getAttribute('data-label')).toBe(shape.header);
    expect((await table.ariaSnapshot()).includes(`cell "${shape.header} `)).toBe(false);
    expect(shape.overflow).toBeLessThanOrEqual(1);
    expect(await page.getByTestId('scroll-hint').count()).toBe(0);
  };

  beforeAll(async () => {
    if (!existsSync(join(DASHBOARD_DIST, 'index.html'))) throw new Error('The dashboard is not built: run npm run build first.');
    t = await startLiveApp({ config: { allowPrivateTargets: true } });
    const store = t.demo.workspaces[0];
    await t.ctx.db.tx((q) => seedDemoData(q, t.ctx.secrets, store.id, t.clock.now()));
    await addEndpoint(t, 'https://receiver.example.com/a-rather-long-path/for-webhooks', ['product.*', 'order.*']);
    await t.call(store.apiKey, 'POST', '/v1/products', { name: 'Hand-thrown stoneware mug with a long name', price: { amount: 3200, currency: 'EUR' } });
    browser = await launchChromium();
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    page = await phone.newPage();
    watch(page, seen);
    await signInToStore(page, t, []);
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('fits the header and the section menu, and shows who is signed in with which role', async () => {
    await fitsTheWidth();
    const who = page.getByTestId('who');
    expect(await who.isVisible()).toBe(true);
    expect(await who.textContent()).toMatch(/^Demo owner · owner/);
    for (const control of [page.getByTestId('workspace-switcher'), page.getByRole('button', { name: 'Sign out' }), page.getByLabel('Id to open'), page.getByTestId('notifications-link')]) {
      const box = (await control.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(390);
    }
    const links = page.getByRole('navigation', { name: 'Sections' }).getByRole('link');
    expect(await links.count()).toBe(9);
    for (const link of await links.all()) {
      const box = (await link.boundingBox())!;
      const name = (await link.textContent()) ?? '';
      expect(box.x, name).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width, name).toBeLessThanOrEqual(390);
    }
    await record(page, 'phone-overview', audit);
  });

  it('shows each list as cards that fit the screen', async () => {
    for (const [section, title] of [['Products', 'Products'], ['Orders', 'Orders'], ['Events', 'Events'], ['Endpoints', 'Endpoints'], ['Deliveries', 'Deliveries'], ['API keys', 'API keys']] as const) {
      await nav(section);
      await heading(page, title);
      await listIsCards();
      await fitsTheWidth();
      await record(page, `phone-${section.toLowerCase().replace(' ', '-')}`, audit);
    }
    await nav('Endpoints');
    await page.getByRole('link', { name: /a-rather-long-path/ }).click();
    await page.getByTestId('endpoint-health').waitFor();
    await fitsTheWidth();
    await record(page, 'phone-endpoint', audit);
  });

  it('says a table scrolls sideways where it is wider than its screen', async () => {
    // Between a phone and a laptop lists are tables again; the deliveries' seven columns do not fit.
    await page.setViewportSize({ width: 640, height: 844 });
    await nav('Deliveries');
    const wrap = page.getByRole('region', { name: 'Deliveries' });
    await wrap.waitFor();
    expect(await wrap.evaluate((element) => element.scrollWidth > element.clientWidth)).toBe(true);
    expect(await wrap.getAttribute('tabindex')).toBe('0');
    await page.getByTestId('scroll-hint').getByText('Scroll sideways for more').waitFor();
    await record(page, 'narrow-deliveries', audit);
    // Wide enough, the hint goes.
    await page.setViewportSize({ width: 1400, height: 844 });
    await page.getByTestId('scroll-hint').waitFor({ state: 'detached' });
    await page.setViewportSize({ width: 390, height: 844 });
  });

  it('had no CSP refusal or script error, and no serious accessibility violation', () => {
    expect(seen.problems).toEqual([]);
    expect(Object.keys(audit).length).toBeGreaterThanOrEqual(9);
    expect(Object.values(audit).every((n) => n === 0)).toBe(true);
  });
});
