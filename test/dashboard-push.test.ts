import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_DIST } from '../src/server/dashboard.js';
import { userOf } from './helpers/app.js';
import { launchChromium } from './helpers/browser.js';
import { heading, record, signInToStore, watch, type PageWatch } from './helpers/dashboard.js';
import { ok } from './helpers/expect.js';
import { startLiveApp, type LiveApp } from './helpers/live.js';
import { browserKeys, subscriptionBody } from './helpers/push.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { missing } from './helpers/services.js';

/**
 * The notifications page in Debian's Chromium. Headless Chromium has the Push API
 * but no push service to subscribe with, so devices are made through the API, and the service
 * worker's push handling is driven through DevTools (ServiceWorker.deliverPushMessage).
 */
describe.skipIf(missing('chromium'))('dashboard push notifications in Chromium', { timeout: 180_000 }, () => {
  let t: LiveApp;
  let browser: Browser;
  let service: Receiver;
  const contexts: BrowserContext[] = [];
  const seen: PageWatch = { urls: [], problems: [] };
  const secrets: string[] = [];
  const audit: Record<string, number> = {};
  const owner = () => userOf(t.demo, 'owner').token;

  /** A signed-in page on the notifications page, in a fresh browser context; `prepare` runs before any script of the page. */
  async function notificationsPage(prepare?: (context: BrowserContext) => Promise<void>): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    contexts.push(context);
    await prepare?.(context);
    const page = await context.newPage();
    watch(page, seen);
    await signInToStore(page, t, secrets);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Notifications', exact: true }).click();
    await heading(page, 'Notifications');
    await page.getByRole('heading', { level: 2, name: 'Push notifications' }).waitFor();
    return { context, page };
  }

  beforeAll(async () => {
    if (!existsSync(join(DASHBOARD_DIST, 'sw.js'))) throw new Error('The dashboard is not built: run npm run build first.');
    t = await startLiveApp({ config: { allowPrivateTargets: true, rateLimitPat: 10_000 } });
    service = await startReceiver(() => ({ status: 201 }));
    browser = await launchChromium();
  }, 180_000);
  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await service?.close();
    await t?.close();
    expect(seen.problems).toEqual([]);
  });

  it('offers "Notify this browser" where the Push API exists, lists the devices and removes one', async () => {
    const laptop = ok(await t.call(owner(), 'POST', '/v1/me/push-devices', subscriptionBody(`${service.url}/push/laptop`, browserKeys(), 'Laptop')), 201);
    const phone = ok(await t.call(owner(), 'POST', '/v1/me/push-devices', subscriptionBody(`${service.url}/push/phone`, browserKeys(), 'Phone')), 201);
    const { page } = await notificationsPage();
    await page.getByRole('button', { name: 'Notify this browser' }).waitFor();
    expect(await page.getByTestId('push-unsupported').count()).toBe(0);
    const list = page.getByTestId('push-device-list');
    await list.getByRole('cell', { name: 'Laptop', exact: true }).waitFor();
    await list.getByRole('cell', { name: 'Phone', exact: true }).waitFor();
    expect(await list.getByText(`127.0.0.1:${service.port}`).count()).toBe(2);
    // The endpoint URL is never shown.
    expect(await page.content()).not.toContain('/push/laptop');
    await record(page, 'notifications-push', audit);

    // Headless Chromium windows are private: the browser refuses the subscription, and the page says so.
    await page.context().grantPermissions(['notifications'], { origin: t.base });
    await page.getByRole('button', { name: 'Notify this browser' }).click();
    await page.getByRole('alert').getByText('The browser refused to subscribe').waitFor();
    expect(ok(await t.call(owner(), 'GET', '/v1/me/push-devices')).data).toHaveLength(2);

    await list.getByRole('button', { name: 'Remove Laptop' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove' }).click();
    await list.getByRole('cell', { name: 'Laptop', exact: true }).waitFor({ state: 'detached' });
    await list.getByRole('cell', { name: 'Phone', exact: true }).waitFor();
    expect(ok(await t.call(owner(), 'GET', '/v1/me/push-devices')).data.map((d: { id: string }) => d.id)).toEqual([phone.id]);
    expect(laptop.id).not.toBe(phone.id);

    await list.getByRole('button', { name: 'Remove Phone' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove' }).click();
    await page.getByText('No device is registered').waitFor();
  });

  it('shows the service worker served under the strict policy turning a push message into a notification', async () => {
    const { context, page } = await notificationsPage(async (c) => c.grantPermissions(['notifications'], { origin: t.base }));
    const cdp = await context.newCDPSession(page);
    const registrations: { registrationId: string; scopeURL: string }[] = [];
    cdp.on('ServiceWorker.workerRegistrationUpdated', (event: { registrations: { registrationId: string; scopeURL: string }[] }) => registrations.push(...event.registrations));
    await cdp.send('ServiceWorker.enable');
    await page.evaluate(() => navigator.serviceWorker.register('/dashboard/sw.js', { scope: '/dashboard/' }));
    // Once active it takes the page that registered it (clients.claim), so a click can bring this tab forward.
    await expect.poll(() => page.evaluate(() => navigator.serviceWorker.controller?.scriptURL ?? null), { timeout: 20_000 }).toBe(`${t.base}/dashboard/sw.js`);
    const registration = registrations.find((r) => r.scopeURL === `${t.base}/dashboard/`)!;
    expect(registration).toBeDefined();

    const message = { id: 'ntf_01kdvdyez0qb6enn081xx53fe4', type: 'webhook.endpoint.auto_disabled', workspaceId: t.demo.workspaces[0].id, message: 'Webhook endpoint whe_x was disabled.', url: `${t.base}/dashboard/notifications` };
    const push = () => cdp.send('ServiceWorker.deliverPushMessage', { origin: t.base, registrationId: registration.registrationId, data: JSON.stringify(message) });
    // A push delivered while the worker is still starting can be dropped by the browser: it is sent
    // again until shown. Notifications of one tag replace each other, so one is shown however many arrive.
    const shown = async () => {
      const list = await page.evaluate(async () => (await (await navigator.serviceWorker.ready).getNotifications()).map((n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data })));
      if (list.length === 0) await push();
      return list;
    };
    await expect.poll(shown, { timeout: 20_000, interval: 500 }).toEqual([{ title: 'svc', body: message.message, tag: message.id, data: { url: message.url } }]);
  });

  it('says so where the browser has no Push API, and still lists the devices', async () => {
    ok(await t.call(owner(), 'POST', '/v1/me/push-devices', subscriptionBody(`${service.url}/push/tablet`, browserKeys(), 'Tablet')), 201);
    const { page } = await notificationsPage(async (c) => {
      await c.addInitScript(() => delete (window as { PushManager?: unknown }).PushManager);
    });
    await page.getByTestId('push-unsupported').getByText('This browser does not support push notifications').waitFor();
    expect(await page.getByRole('button', { name: 'Notify this browser' }).count()).toBe(0);
    await page.getByTestId('push-device-list').getByRole('cell', { name: 'Tablet', exact: true }).waitFor();
    await record(page, 'notifications-push-unsupported', audit);
    // Nothing the pages asked for carried a credential.
    for (const url of seen.urls) for (const secret of secrets) expect(url).not.toContain(secret);
  });
});
