import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loggerOptions } from '../src/http/logger.js';
import { checkAlerts } from '../src/webhooks/alerts/check.js';
import type { DeliveryWorker } from '../src/engine/delivery/worker.js';
import { record, signInToStore, type PageWatch } from './helpers/dashboard.js';
import { closeJourney, expectNothingLeaked, journeyShortcuts, openOwnerPage } from './helpers/dashboard-journey.js';
import { addEndpoint, eventually, testWorker } from './helpers/delivery.js';
import { startLiveApp, type LiveApp } from './helpers/live.js';
import { LogCapture } from './helpers/log.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { missing } from './helpers/services.js';

/**
 * A failing endpoint in the dashboard, in Debian's Chromium against a live service with a delivery
 * worker and a receiver on 127.0.0.1 that answers 503: the endpoints list and the endpoint's page
 * say since when and what fails, and the page's switch turns the endpoint's alerts off and on. The
 * rule's window is shortened by configuration to a millisecond; the check is run by the test.
 */
describe.skipIf(missing('chromium'))('failing endpoints in the dashboard', { timeout: 180_000 }, () => {
  let t: LiveApp;
  let browser: Browser;
  let page: Page;
  let worker: DeliveryWorker;
  let receiver: Receiver;
  const log = new LogCapture();
  const seen: PageWatch = { urls: [], problems: [] };
  const secrets: string[] = [];
  const audit: Record<string, number> = {};
  let endpointId = '';

  const { apiKey, at } = journeyShortcuts(() => t, () => page);
  const api = async (method: 'GET' | 'POST', url: string) => {
    const res = await t.call(apiKey(), method, url);
    expect(res.statusCode, `${method} ${url}: ${res.body}`).toBeLessThan(300);
    return res.json();
  };
  const check = () => checkAlerts({ db: t.ctx.db, clock: t.ctx.clock, config: t.ctx.config });

  beforeAll(async () => {
    t = await startLiveApp({
      config: { allowPrivateTargets: true, retryScheduleMs: [100], pollIntervalMs: 200, rateLimitPat: 10_000, alertFailingAfterMs: 1, alertFailingDeliveries: 3 },
      logger: loggerOptions('info', log),
    });
    receiver = await startReceiver(() => ({ status: 503, body: 'down' }));
    worker = testWorker(t);
    await worker.start();
    endpointId = (await addEndpoint(t, receiver.url, ['webhook.ping'])).id;
    const sent: string[] = [];
    for (let i = 0; i < 3; i++) sent.push((await api('POST', `/v1/webhooks/endpoints/${endpointId}/send-test-event`)).deliveryId);
    await eventually(async () => {
      for (const id of sent) if ((await api('GET', `/v1/webhooks/deliveries/${id}`)).delivery.status !== 'failed') return false;
      return true;
    });
    expect(await check()).toBe(1);
    ({ browser, page } = await openOwnerPage(seen));
    await signInToStore(page, t, secrets);
  }, 180_000);
  afterAll(async () => {
    await closeJourney({ browser, worker, receiver, t });
  });

  it('shows the endpoint failing in the list and on its page: since when and what fails', async () => {
    const { failing } = await api('GET', `/v1/webhooks/endpoints/${endpointId}`);
    expect(failing).toMatchObject({ responseStatus: 503 });
    await page.goto(at('/endpoints'));
    const line = page.getByTestId('endpoint-failing-line');
    await line.getByText(/failing since/).waitFor();
    expect(await line.textContent()).toContain('503');
    expect(await line.locator('time').getAttribute('datetime')).toBe(failing.since);
    await record(page, 'endpoints-failing', audit);

    await page.goto(at(`/endpoints/${endpointId}`));
    const notice = page.getByTestId('endpoint-failing');
    await notice.getByText(/every attempt has failed/).waitFor();
    expect(await notice.textContent()).toContain('503');
    expect(await notice.locator('time').getAttribute('datetime')).toBe(failing.since);
    await record(page, 'endpoint-failing', audit);
  });

  it('turns the endpoint’s alerts off with the switch: the incident ends without a notice; on again, it is told again', async () => {
    const toggle = page.getByTestId('endpoint-alerts').getByRole('switch');
    expect(await toggle.isChecked()).toBe(true);
    await toggle.click();
    await page.getByTestId('endpoint-alerts').getByText(/off: nobody is told/).waitFor();
    expect((await api('GET', `/v1/webhooks/endpoints/${endpointId}`)).alerts).toBe(false);
    expect(await check()).toBe(0);
    await page.reload();
    await page.getByTestId('endpoint-alerts').getByText(/off: nobody/).waitFor();
    expect(await page.getByTestId('endpoint-failing').count()).toBe(0);
    expect(await page.getByRole('switch').isChecked()).toBe(false);
    await record(page, 'endpoint-alerts-off', audit);

    await page.getByRole('switch').click();
    await page.getByTestId('endpoint-alerts').getByText(/on: people who can read/).waitFor();
    expect(await check()).toBe(1);
    const notices = await t.ctx.db.query<{ type: string }>("SELECT type FROM notifications WHERE subject->>'id' = $1", [endpointId]);
    // Owner, admin and viewer: told once when it began failing, once more after alerts came back on.
    expect(notices.map((n) => n.type)).toEqual(Array(6).fill('webhook.endpoint.failing'));
  });

  it('leaked nothing: no code or token in any URL asked for or in the service log; no CSP refusal or script error', () => {
    expectNothingLeaked(seen, log, secrets);
    expect(Object.values(audit)).toEqual([0, 0, 0]);
  });
});
