import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_DIST } from '../src/server/dashboard.js';
import { loggerOptions } from '../src/http/logger.js';
import type { DeliveryWorker } from '../src/engine/delivery/worker.js';
import { userOf } from './helpers/app.js';
import { launchChromium } from './helpers/browser.js';
import { heading, record, signInToStore, watch, type PageWatch } from './helpers/dashboard.js';
import { newId } from '../src/lib/ids.js';
import { addEndpoint, eventually, testWorker } from './helpers/delivery.js';
import { startLiveApp, type LiveApp } from './helpers/live.js';
import { LogCapture } from './helpers/log.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { missing } from './helpers/services.js';

/**
 * An endpoint's bulk recovery (preview, confirm, progress, recent recoveries) and its extra headers,
 * ordering and trace context, in Debian's Chromium against a live service with a delivery worker and a receiver
 * on 127.0.0.1 (as test/dashboard-pages.test.ts). Each view is checked with axe-core; no code, token
 * or header value may appear in a URL the browser asks for or in the service's log.
 */
describe.skipIf(missing('chromium'))('dashboard recovery and endpoint options in Chromium', { timeout: 180_000 }, () => {
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
  const failed: string[] = [];

  const apiKey = () => t.demo.workspaces[0].apiKey;
  const at = (path: string) => `${t.base}/dashboard${path}`;
  const api = async (method: 'GET' | 'POST' | 'PATCH', url: string, body?: unknown) => {
    const res = await t.call(apiKey(), method, url, body);
    expect(res.statusCode, `${method} ${url}: ${res.body}`).toBeLessThan(300);
    return res.json();
  };

  beforeAll(async () => {
    if (!existsSync(join(DASHBOARD_DIST, 'index.html'))) throw new Error('The dashboard is not built: run npm run build first.');
    t = await startLiveApp({ config: { allowPrivateTargets: true, retryScheduleMs: [100], pollIntervalMs: 200, rateLimitPat: 10_000 }, logger: loggerOptions('info', log) });
    receiver = await startReceiver(() => ({ status: 503, body: 'down' }));
    worker = testWorker(t);
    await worker.start();
    endpointId = (await addEndpoint(t, receiver.url, ['webhook.ping'])).id;
    // Two deliveries that fail every attempt.
    for (let i = 0; i < 2; i++) failed.push((await api('POST', `/v1/webhooks/endpoints/${endpointId}/send-test-event`)).deliveryId);
    await eventually(async () => {
      for (const id of failed) if ((await api('GET', `/v1/webhooks/deliveries/${id}`)).delivery.status !== 'failed') return false;
      return true;
    });
    receiver.respond(() => ({ status: 200, body: 'ok' }));

    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    watch(page, seen);
    await signInToStore(page, t, secrets);
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await worker?.stop();
    await receiver?.close();
    await t?.close();
  });

  it('previews 2 failed deliveries, recovers them after a confirmation, and shows the replays delivered', async () => {
    await page.goto(at(`/endpoints/${endpointId}`));
    const recover = page.getByTestId('recover');
    await recover.getByRole('button', { name: 'Preview' }).click();
    await recover.getByTestId('recover-preview').getByText('2 deliveries would be sent again').waitFor();
    await record(page, 'recover-preview', audit);
    // Nothing is sent before the confirmation; dismissing it changes nothing.
    await recover.getByRole('button', { name: 'Recover 2 deliveries' }).click();
    await record(page, 'recover-confirm', audit);
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel', exact: true }).click();
    expect((await api('GET', `/v1/webhooks/endpoints/${endpointId}/recoveries`)).data).toEqual([]);

    await recover.getByRole('button', { name: 'Recover 2 deliveries' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Recover', exact: true }).click();
    const progress = recover.getByTestId('recovery-progress');
    await progress.getByText('completed').waitFor();
    expect(await progress.textContent()).toMatch(/2 of 2 replayed, 0 skipped/);
    const recoveries = (await api('GET', `/v1/webhooks/endpoints/${endpointId}/recoveries`)).data;
    expect(recoveries).toHaveLength(1);
    expect(recoveries[0]).toMatchObject({ status: 'completed', count: 2, replayed: 2, statuses: ['failed', 'disabled'] });
    await recover.getByTestId('recoveries').getByRole('row').filter({ hasText: '2 of 2' }).waitFor();

    // The replays show up among the endpoint's deliveries, and succeed.
    const replays = (await api('GET', `/v1/webhooks/deliveries?endpointId=${endpointId}`)).data.filter((d: { replayOf: string | null }) => d.replayOf);
    expect(replays.map((d: { replayOf: string }) => d.replayOf).sort()).toEqual([...failed].sort());
    const table = page.getByTestId('deliveries');
    for (const replay of replays) await table.getByRole('row').filter({ hasText: replay.id }).getByText('success', { exact: true }).waitFor();
    await record(page, 'recover-done', audit);

    // A second preview finds nothing left to send.
    await recover.getByRole('button', { name: 'Preview' }).click();
    await recover.getByTestId('recover-preview').getByText('0 deliveries would be sent again').waitFor();
    expect(await recover.getByRole('button', { name: /^Recover \d/ }).count()).toBe(0);
  });

  it("shows the API's 409 with its request id for a paused endpoint, and its 400 for a window ending before it starts", async () => {
    await api('PATCH', `/v1/webhooks/endpoints/${endpointId}`, { active: false });
    await page.reload();
    const recover = page.getByTestId('recover');
    await recover.getByRole('button', { name: 'Preview' }).click();
    const alert = recover.getByRole('alert');
    await alert.getByText(/409 ENDPOINT_INACTIVE/).waitFor();
    expect(await alert.getByTestId('request-id').textContent()).toMatch(/^req_/);
    await record(page, 'recover-refused', audit);
    await api('PATCH', `/v1/webhooks/endpoints/${endpointId}`, { active: true });

    await page.reload();
    await recover.getByLabel('Until (empty: now)').fill('2020-01-01T00:00');
    await recover.getByRole('button', { name: 'Preview' }).click();
    await alert.getByText(/400 VALIDATION/).waitFor();
    expect(await alert.getByTestId('request-id').textContent()).toMatch(/^req_/);
    expect((await api('GET', `/v1/webhooks/endpoints/${endpointId}/recoveries`)).data).toHaveLength(1);
  });

  it('sets an extra header and subject ordering in the form; the value is sent but never shown again', async () => {
    const value = 'k-secret-header-value-123';
    secrets.push(value);
    await page.goto(at(`/endpoints/${endpointId}`));
    await page.getByTestId('endpoint-ordering').getByText('none').waitFor();
    expect(await page.getByTestId('endpoint-propagate-trace').textContent()).toBe('not sent');
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    const editor = page.getByTestId('headers-editor');
    await editor.getByRole('button', { name: 'Add header' }).click();
    await editor.getByLabel('Header 1 name').fill('X-Api-Key');
    await editor.getByLabel('Header 1 value').fill(value);
    await page.getByLabel('Ordering').selectOption('subject');
    await page.getByLabel('Send trace context').check();
    await record(page, 'endpoint-edit-options', audit);
    await page.getByRole('button', { name: 'Save changes' }).click();

    const headers = page.getByTestId('endpoint-headers');
    await headers.getByText('x-api-key').waitFor();
    await page.getByTestId('endpoint-ordering').getByText(/by subject/).waitFor();
    await page.getByTestId('endpoint-propagate-trace').getByText(/^sent/).waitFor();
    expect(await headers.textContent()).toContain('[redacted]');
    expect(await page.content()).not.toContain(value);
    await record(page, 'endpoint-options', audit);
    expect(await api('GET', `/v1/webhooks/endpoints/${endpointId}`)).toMatchObject({ headers: { 'x-api-key': value }, ordering: 'subject', propagateTrace: true });

    // Editing again shows the name, not the value; saved untouched, the value stays.
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    expect(await editor.getByLabel('Header 1 name').inputValue()).toBe('x-api-key');
    expect(await editor.getByLabel('Header 1 value').inputValue()).toBe('');
    expect(await page.getByLabel('Send trace context').isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('heading', { name: 'Edit endpoint' }).waitFor({ state: 'detached' });
    expect(await api('GET', `/v1/webhooks/endpoints/${endpointId}`)).toMatchObject({ headers: { 'x-api-key': value }, ordering: 'subject', propagateTrace: true });

    // Deliveries carry it.
    const before = receiver.requests.length;
    await api('POST', `/v1/webhooks/endpoints/${endpointId}/send-test-event`);
    await receiver.waitFor(before + 1);
    expect(receiver.requests.at(-1)!.headers['x-api-key']).toBe(value);
  });

  it('follows a recovery too large for one request every second until it completes', async () => {
    const bulk = (await addEndpoint(t, `${receiver.url}/bulk`, ['webhook.ping'])).id;
    // 600 failed deliveries written directly (more than the 500 a request recovers by itself).
    const now = t.clock.now();
    const ids = Array.from({ length: 600 }, () => newId('whd', now));
    await t.ctx.db.query(
      `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, payload, status, attempt, created_at)
       SELECT d.id, $2, $3, 'evt_' || substr(d.id, 5), 'webhook.ping', json_build_object('seed', d.id)::text, 'failed', 2, $4
         FROM unnest($1::text[]) AS d (id)`,
      [ids, t.demo.workspaces[0].id, bulk, now],
    );
    await page.goto(at(`/endpoints/${bulk}`));
    const recover = page.getByTestId('recover');
    await recover.getByRole('button', { name: 'Preview' }).click();
    await recover.getByTestId('recover-preview').getByText('600 deliveries would be sent again').waitFor();
    await recover.getByRole('button', { name: 'Recover 600 deliveries' }).click();
    const polled: string[] = [];
    page.on('request', (request) => request.url().includes('/v1/webhooks/recoveries/') && polled.push(request.url()));
    await page.getByRole('dialog').getByRole('button', { name: 'Recover', exact: true }).click();
    const progress = recover.getByTestId('recovery-progress');
    await progress.getByText('completed').waitFor();
    expect(await progress.textContent()).toMatch(/600 of 600 replayed, 0 skipped/);
    expect(polled.length).toBeGreaterThanOrEqual(1);
    await recover.getByTestId('recoveries').getByRole('row').filter({ hasText: '600 of 600' }).waitFor();
    expect((await api('GET', `/v1/webhooks/endpoints/${bulk}/recoveries`)).data[0]).toMatchObject({ status: 'completed', count: 600, replayed: 600 });
  });

  it('shows a Viewer the header names redacted and the ordering, without the recover form', async () => {
    const viewer = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const phone = await viewer.newPage();
    watch(phone, seen);
    const token = userOf(t.demo, 'viewer').token;
    secrets.push(token);
    await phone.goto(at('/'));
    await phone.getByLabel('Or paste a personal access token').fill(token);
    await phone.getByRole('button', { name: 'Sign in' }).click();
    await heading(phone, 'Store');
    await phone.goto(at(`/endpoints/${endpointId}`));
    await phone.getByTestId('endpoint-headers').getByText('x-api-key').waitFor();
    await phone.getByTestId('endpoint-ordering').getByText(/by subject/).waitFor();
    await phone.getByTestId('recoveries').getByRole('row').filter({ hasText: '2 of 2' }).waitFor();
    expect(await phone.getByRole('button', { name: 'Preview' }).count()).toBe(0);
    expect(await phone.getByRole('button', { name: 'Edit', exact: true }).count()).toBe(0);
    await record(phone, 'endpoint-options-viewer-phone', audit);
    await viewer.close();
  });

  it('leaked nothing: no code, token or header value in any URL asked for or in the service log; no CSP refusal or script error', () => {
    expect(seen.problems).toEqual([]);
    const logged = log.text;
    expect(logged).toContain('/recover');
    for (const secret of secrets) {
      expect(seen.urls.filter((url) => url.includes(secret)), 'a URL').toEqual([]);
      expect(logged.includes(secret), 'the log').toBe(false);
    }
    expect(Object.keys(audit).length).toBeGreaterThanOrEqual(7);
    expect(Object.values(audit).every((n) => n === 0)).toBe(true);
  });
});
