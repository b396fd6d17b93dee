import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { Browser, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from './helpers/browser.js';
import { startLiveApp, type LiveApp } from './helpers/live.js';

/**
 * Issues 20 and 35: /docs renders the OpenAPI document with Swagger UI, every asset served by the
 * service itself, compressed, and light enough for a phone: operations are listed and opened on
 * demand, and nothing is asked of another host.
 */
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
    const references = [...res.body.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((m) => m[1]);
    expect(references).toEqual(['data:,', '/openapi.json', '/docs/swagger-ui.css', '/openapi.json', '/docs/swagger-ui-bundle.js', '/docs/reference.js']);
    expect(res.body).not.toMatch(/\/\/[a-z0-9.-]+\.[a-z]{2,}/i);
    const policy = String(res.headers['content-security-policy']);
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("script-src 'self'");
    for (const directive of policy.split('; ')) expect(directive, directive).not.toMatch(/https?:|\*|unsafe-eval/);
  });

  it('sends its assets and the document compressed when the client accepts it, and as they are otherwise', async () => {
    for (const [path, type] of [
      ['/docs/swagger-ui-bundle.js', 'application/javascript; charset=utf-8'],
      ['/docs/swagger-ui.css', 'text/css; charset=utf-8'],
      ['/openapi.json', 'application/json; charset=utf-8'],
    ]) {
      const plain = await t.app.inject({ method: 'GET', url: path });
      expect(plain.statusCode, path).toBe(200);
      expect(plain.headers['content-type']).toBe(type);
      expect(plain.headers['content-encoding']).toBeUndefined();
      const br = await t.app.inject({ method: 'GET', url: path, headers: { 'accept-encoding': 'gzip, deflate, br' } });
      expect(br.headers['content-encoding']).toBe('br');
      expect(br.headers.vary).toBe('accept-encoding');
      expect(brotliDecompressSync(br.rawPayload).equals(plain.rawPayload), path).toBe(true);
      expect(br.rawPayload.length, path).toBeLessThan(plain.rawPayload.length / 3);
      const gzip = await t.app.inject({ method: 'GET', url: path, headers: { 'accept-encoding': 'gzip' } });
      expect(gzip.headers['content-encoding']).toBe('gzip');
      expect(gunzipSync(gzip.rawPayload).equals(plain.rawPayload), path).toBe(true);
    }
    const bundle = await t.app.inject({ method: 'GET', url: '/docs/swagger-ui-bundle.js' });
    expect(bundle.rawPayload.length).toBeGreaterThan(500_000);
    expect(bundle.headers['cache-control']).toBe('public, max-age=3600');
  });

  it('renders the reference on a phone: operations, an operation opened, webhooks and the error envelope, with no request leaving the service', async () => {
    const page = await browser.newPage({ viewport: { width: 412, height: 823 }, isMobile: true, hasTouch: true });
    const requests: Request[] = [];
    const failures: string[] = [];
    const errors: string[] = [];
    page.on('request', (request) => requests.push(request));
    page.on('requestfailed', (request) => failures.push(`${request.url()} ${request.failure()?.errorText}`));
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message) => message.type() === 'error' && errors.push(message.text()));
    try {
      const answer = await page.goto(`${base}/docs`);
      expect(answer?.status()).toBe(200);
      await page.getByText('List products, newest first', { exact: true }).first().waitFor({ timeout: 30_000 });
      await expect.poll(() => page.title()).toBe('svc API reference');
      for (const tag of ['Products', 'Orders', 'Webhook endpoints', 'Webhook deliveries']) await expect.poll(() => page.locator(`h3#operations-tag-${tag.replace(/ /g, '_')}`).count()).toBe(1);
      // Operations are listed, not rendered: a phone builds a few thousand nodes, not every operation.
      expect(await page.evaluate(() => document.getElementsByTagName('*').length)).toBeLessThan(6000);

      await page.getByText('Create a product', { exact: true }).first().click();
      const opened = page.locator('#operations-Products-createProduct');
      await expect.poll(() => opened.getByText('Emits product.created.', { exact: false }).count()).toBeGreaterThan(0);
      await expect.poll(() => opened.getByText('RATE_LIMITED', { exact: false }).count()).toBeGreaterThan(0);
      await expect.poll(() => opened.getByText('Espresso beans, 1 kg', { exact: false }).count()).toBeGreaterThan(0);

      await page.getByText('Webhooks', { exact: true }).first().scrollIntoViewIfNeeded();
      await expect.poll(() => page.getByText('order.paid', { exact: true }).count()).toBeGreaterThan(0);

      // The description's guides are links, and they lead somewhere.
      const guide = page.locator('a[href="/docs/guides/receiving-webhooks.md"]').first();
      await expect.poll(() => guide.count()).toBe(1);
      expect((await page.request.get(`${base}/docs/guides/receiving-webhooks.md`)).status()).toBe(200);
      expect(errors).toEqual([]);
      expect(failures).toEqual([]);
      const elsewhere = requests.map((r) => r.url()).filter((url) => !url.startsWith(`${base}/`) && !url.startsWith('data:'));
      expect(elsewhere).toEqual([]);
      const paths = requests.map((r) => new URL(r.url()).pathname);
      expect(paths).toEqual(expect.arrayContaining(['/docs', '/docs/swagger-ui.css', '/docs/swagger-ui-bundle.js', '/docs/reference.js', '/openapi.json']));
      // The document is fetched once: the page's preload is what the renderer uses.
      expect(paths.filter((p) => p === '/openapi.json')).toHaveLength(1);
    } finally {
      await page.close();
    }
  });
});
