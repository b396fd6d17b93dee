import type { Browser, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from './helpers/browser.js';
import { startLiveApp, type LiveApp } from './helpers/live.js';

/** Issue 20: /docs renders the OpenAPI document with Redoc, every asset served by the service itself. */
describe('GET /docs', () => {
  let t: LiveApp;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    t = await startLiveApp();
    base = t.base;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('is a page that references no other host, under a policy that allows only this one', async () => {
    const res = await t.call(null, 'GET', '/docs');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    const references = [...res.body.matchAll(/\b(?:src|href|spec-url)="([^"]*)"/g)].map((m) => m[1]);
    expect(references).toEqual(['data:,', '/openapi.json', '/docs/redoc.standalone.js']);
    expect(res.body).not.toMatch(/\/\/[a-z0-9.-]+\.[a-z]{2,}/i);
    const policy = String(res.headers['content-security-policy']);
    expect(policy).toContain("default-src 'none'");
    for (const directive of policy.split('; ')) expect(directive, directive).not.toMatch(/https?:|\*/);

    const bundle = await t.call(null, 'GET', '/docs/redoc.standalone.js');
    expect(bundle.statusCode).toBe(200);
    expect(bundle.headers['content-type']).toBe('application/javascript; charset=utf-8');
    expect(bundle.body.length).toBeGreaterThan(500_000);
  });

  it('renders the reference in Chromium: operations, webhooks and the error envelope, with no request leaving 127.0.0.1', async () => {
    const page = await browser.newPage();
    const requests: Request[] = [];
    const failures: { url: string; error: string }[] = [];
    const errors: string[] = [];
    page.on('request', (request) => requests.push(request));
    page.on('requestfailed', (request) => failures.push({ url: request.url(), error: request.failure()?.errorText ?? '' }));
    page.on('pageerror', (error) => errors.push(error.message));
    try {
      const answer = await page.goto(`${base}/docs`);
      expect(answer?.status()).toBe(200);
      await page.getByRole('heading', { name: 'List products, newest first' }).first().waitFor({ timeout: 30_000 });
      await expect.poll(() => page.title()).toBe('svc API reference');
      const headings = await page.getByRole('heading').allTextContents();
      for (const name of ['Create a product', 'Webhook events', 'Queue a webhook.ping delivery to this endpoint (409 when it is not active)']) {
        expect(headings.map((h) => h.trim()), name).toContain(name);
      }
      await expect.poll(() => page.getByText('product.created').count()).toBeGreaterThan(0);
      await expect.poll(() => page.getByText('RATE_LIMITED', { exact: false }).count()).toBeGreaterThan(0);
      expect(errors).toEqual([]);

      const local = (url: string) => url.startsWith(`${base}/`) || url.startsWith('blob:') || url.startsWith('data:');
      expect(requests.filter((r) => local(r.url())).map((r) => new URL(r.url()).pathname)).toEqual(expect.arrayContaining(['/docs', '/docs/redoc.standalone.js', '/openapi.json']));
      // Redoc draws its credit from a CDN: the page's policy stops it in the browser, before any connection.
      const elsewhere = requests.map((r) => r.url()).filter((url) => !local(url));
      expect(failures.filter((f) => elsewhere.includes(f.url))).toEqual(elsewhere.map((url) => ({ url, error: 'csp' })));
    } finally {
      await page.close();
    }
  });
});
