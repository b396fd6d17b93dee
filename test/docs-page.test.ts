import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from './helpers/browser.js';
import { seriousViolations } from './helpers/dashboard.js';
import { startLiveApp, type LiveApp } from './helpers/live.js';
import { missing } from './helpers/services.js';

type Doc = Record<string, any>;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/**
 * /docs is the API reference as HTML written from the OpenAPI document: every operation, webhook
 * and schema readable without JavaScript, served compressed by the service itself, accessible
 * (axe: no serious or critical finding) at a laptop's and a phone's width, with a filter.
 */
describe.skipIf(missing('chromium'))('GET /docs', () => {
  let t: LiveApp;
  let base: string;
  let browser: Browser;
  let doc: Doc;

  beforeAll(async () => {
    t = await startLiveApp();
    base = t.base;
    browser = await launchChromium();
    doc = JSON.parse((await t.app.inject({ method: 'GET', url: '/openapi.json' })).body) as Doc;
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('is a page that loads nothing from another host, under a policy that allows only this one', async () => {
    const res = await t.call(null, 'GET', '/docs');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    // What the page loads (not what it links to): its icon and its script.
    const loads = [...res.body.matchAll(/<(?:script|img|link)\b[^>]*\b(?:src|href)="([^"]*)"/g)].map((m) => m[1]);
    expect(loads).toEqual(['data:,', '/docs/reference.js']);
    const policy = String(res.headers['content-security-policy']);
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("script-src 'self'");
    expect(policy).toMatch(/style-src 'sha256-[A-Za-z0-9+/=]+'/);
    for (const directive of policy.split('; ')) expect(directive, directive).not.toMatch(/https?:|\*|unsafe/);
  });

  it('sends the page, its script and the document compressed when the client accepts it, and as they are otherwise', async () => {
    for (const [path, type] of [
      ['/docs', 'text/html; charset=utf-8'],
      ['/docs/reference.js', 'application/javascript; charset=utf-8'],
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
      expect(br.rawPayload.length, path).toBeLessThan(plain.rawPayload.length / 2);
      const gzip = await t.app.inject({ method: 'GET', url: path, headers: { 'accept-encoding': 'gzip' } });
      expect(gzip.headers['content-encoding']).toBe('gzip');
      expect(gunzipSync(gzip.rawPayload).equals(plain.rawPayload), path).toBe(true);
    }
    // The page is written once: the same bytes every time.
    const again = await t.app.inject({ method: 'GET', url: '/docs', headers: { 'accept-encoding': 'br' } });
    expect(again.rawPayload.length).toBeLessThan(60_000);
  });

  it('shows every operation and webhook (method, path, summary, parameters, body, answers and errors) and every schema, without JavaScript', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    try {
      expect((await page.goto(`${base}/docs`))?.status()).toBe(200);
      const sectionText = (id: string) => page.evaluate((i) => document.getElementById(i)?.textContent ?? null, id);
      let count = 0;
      for (const [section, webhook] of [['paths', false], ['webhooks', true]] as const) {
        for (const [path, item] of Object.entries(doc[section] as Record<string, Doc>)) {
          for (const method of METHODS.filter((m) => item[m])) {
            const op = item[method];
            const text = await sectionText(op.operationId);
            expect(text, `${method} ${path}`).not.toBeNull();
            const expected = [method.toUpperCase(), op.summary, ...Object.keys(op.responses)];
            if (!webhook) expected.push(path);
            for (const p of op.parameters ?? []) expected.push(p.$ref ? doc.components.parameters[p.$ref.split('/').pop()].name : p.name);
            for (const [, media] of Object.entries((op.requestBody?.content ?? {}) as Record<string, Doc>)) {
              const schema = media.schema;
              if (schema.$ref) expected.push(schema.$ref.split('/').pop());
              else for (const name of Object.keys(schema.properties ?? {})) expected.push(name);
            }
            for (const answer of Object.values(op.responses as Record<string, Doc>)) {
              const schema = answer.content?.['application/json']?.schema;
              if (schema?.$ref) expected.push(schema.$ref.split('/').pop());
            }
            for (const word of expected) expect(text, `${op.operationId}: ${word}`).toContain(word);
            count++;
          }
        }
      }
      expect(count).toBeGreaterThan(80);
      for (const [name, schema] of Object.entries(doc.components.schemas as Record<string, Doc>)) {
        const text = await sectionText(`schema-${name}`);
        for (const property of Object.keys(schema.properties ?? {})) expect(text, `${name}.${property}`).toContain(property);
      }
      // The error envelope's codes, a request body's example and the webhooks' payloads are there to read.
      const body = (await page.textContent('body'))!;
      for (const word of ['RATE_LIMITED', 'INVALID_STATE', 'Espresso beans, 1 kg', 'order.paid', 'webhook-signature']) expect(body).toContain(word);
      // Links lead to what they name: anchors on the page, the guides the service serves.
      const anchors = await page.evaluate(() => [...document.querySelectorAll('a[href^="#"]')].map((a) => a.getAttribute('href')!.slice(1)));
      const missing = await page.evaluate((ids) => ids.filter((id) => !document.getElementById(id)), [...new Set(anchors)]);
      expect(missing).toEqual([]);
      const guides = await page.evaluate(() => [...new Set([...document.querySelectorAll('a[href^="/docs/guides/"]')].map((a) => a.getAttribute('href')!))]);
      expect(guides).toContain('/docs/guides/receiving-webhooks.md');
      for (const guide of guides) expect((await page.request.get(`${base}${guide}`)).status(), guide).toBe(200);
      // Without the script the filter, which would do nothing, is not shown.
      expect(await page.isHidden('#search')).toBe(true);
    } finally {
      await context.close();
    }
  });

  for (const [width, height, phone] of [
    [1280, 800, false],
    [390, 844, true],
  ] as const) {
    // axe checks the contrast of every text on a long page: minutes on a busy machine.
    it(`has no serious or critical accessibility finding at ${width}×${height}, fits the width, and filters`, { timeout: 300_000 }, async () => {
      const page: Page = await browser.newPage({ viewport: { width, height }, isMobile: phone, hasTouch: phone });
      const requests: string[] = [];
      const errors: string[] = [];
      page.on('request', (request) => requests.push(request.url()));
      page.on('pageerror', (error) => errors.push(error.message));
      page.on('console', (message) => message.type() === 'error' && errors.push(message.text()));
      try {
        expect((await page.goto(`${base}/docs`))?.status()).toBe(200);
        expect(await page.title()).toBe('svc API reference');
        expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
        const violations = await seriousViolations(page);
        expect(violations.map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).slice(0, 5).join(', ')}`)).toEqual([]);

        await page.getByLabel('Filter operations').fill('refund');
        await expect.poll(() => page.locator('#matches').textContent()).toMatch(/^\d+ of \d+ match$/);
        expect(await page.isVisible('#refundOrder')).toBe(true);
        expect(await page.isHidden('#createProduct')).toBe(true);
        expect(await page.isVisible('#orderRefundedWebhook')).toBe(true);
        await page.getByLabel('Filter operations').fill('');
        await expect.poll(() => page.isVisible('#createProduct')).toBe(true);

        expect(errors).toEqual([]);
        expect(requests.filter((url) => !url.startsWith(`${base}/`) && !url.startsWith('data:'))).toEqual([]);
      } finally {
        await page.close();
      }
    });
  }
});
