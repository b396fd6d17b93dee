import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_CSP, DASHBOARD_DIST, registerDashboard } from '../src/server/dashboard.js';
import { registerErrorHandler } from '../src/http/error-handler.js';
import { startTestApp, type TestApp } from './helpers/app.js';

/** How `svc serve` serves the built dashboard at /dashboard/. */
describe('dashboard files', () => {
  let dist: string;
  let app: FastifyInstance;
  const script = `console.log(${JSON.stringify('x'.repeat(4000))});\n`;

  beforeAll(async () => {
    dist = mkdtempSync(join(tmpdir(), 'svc-dashboard-'));
    mkdirSync(join(dist, 'assets'));
    writeFileSync(join(dist, 'index.html'), '<!doctype html><title>t</title><script type="module" src="/dashboard/assets/app-Ab12.js"></script>');
    writeFileSync(join(dist, 'assets', 'app-Ab12.js'), script);
    writeFileSync(join(dist, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    app = Fastify({ routerOptions: { ignoreTrailingSlash: true } });
    registerErrorHandler(app);
    registerDashboard(app, `${dist}/`);
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
    rmSync(dist, { recursive: true, force: true });
  });

  it('serves index.html for the application and its pages, revalidated on every load, under a policy of this origin only', async () => {
    for (const url of ['/dashboard', '/dashboard/', '/dashboard/endpoints/whe_x', '/dashboard/deliveries?status=failed']) {
      const res = await app.inject({ url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['content-security-policy']).toBe(DASHBOARD_CSP);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      expect(res.body).toContain('/dashboard/assets/app-Ab12.js');
    }
    expect(DASHBOARD_CSP.split('; ')[0]).toBe("default-src 'self'");
    for (const directive of DASHBOARD_CSP.split('; ')) expect(directive).not.toMatch(/unsafe|https?:|\*/);

    const first = await app.inject({ url: '/dashboard/' });
    const again = await app.inject({ url: '/dashboard/', headers: { 'if-none-match': String(first.headers.etag) } });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
  });

  it('serves hashed assets for a year, gzipped when the browser takes it; unknown assets are 404, never the page', async () => {
    const plain = await app.inject({ url: '/dashboard/assets/app-Ab12.js' });
    expect(plain.statusCode).toBe(200);
    expect(plain.headers['content-type']).toBe('application/javascript; charset=utf-8');
    expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(plain.body).toBe(script);
    const zipped = await app.inject({ url: '/dashboard/assets/app-Ab12.js', headers: { 'accept-encoding': 'gzip, br' } });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(zipped.rawPayload).toString()).toBe(script);
    expect(zipped.rawPayload.length).toBeLessThan(script.length / 10);

    const icon = await app.inject({ url: '/dashboard/favicon.svg' });
    expect([icon.statusCode, icon.headers['content-type'], icon.headers['cache-control']]).toEqual([200, 'image/svg+xml', 'public, max-age=3600']);

    for (const url of ['/dashboard/assets/gone-123.js', '/dashboard/assets/..%2F..%2Fpackage.json', '/dashboard/assets/sub/x.js']) {
      const res = await app.inject({ url });
      expect(res.statusCode, url).toBe(404);
      expect(res.json().error.code).toBe('NOT_FOUND');
    }
    // A path that climbs out of the folder is only ever a page of the application.
    for (const url of ['/dashboard/../package.json', '/dashboard/%2e%2e/%2e%2e/package.json']) {
      const res = await app.inject({ url });
      expect(res.body, url).not.toContain('"name"');
    }
  });

  it('says how to build the dashboard when it is not built', async () => {
    const bare = Fastify();
    registerErrorHandler(bare);
    registerDashboard(bare, join(dist, 'nothing/'));
    const res = await bare.inject({ url: '/dashboard/' });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.message).toBe('The dashboard is not built: run npm run build, then reload.');
    await bare.close();
  });
});

describe('the built dashboard, as the service serves it', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  }, 120_000);
  afterAll(() => t?.close());

  it('loads only files of its own build: no inline script or style, no other host, first load under 250 KB gzipped', async () => {
    const index = await t.app.inject({ url: '/dashboard/', headers: { 'accept-encoding': 'gzip' } });
    expect(index.statusCode, 'run npm run build first').toBe(200);
    // A page this small goes out as it is; scripts and styles go out gzipped.
    const html = index.headers['content-encoding'] === 'gzip' ? gunzipSync(index.rawPayload).toString() : index.body;
    expect(html).toBe(readFileSync(join(DASHBOARD_DIST, 'index.html'), 'utf8'));
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|\sstyle=/);
    expect(html).not.toMatch(/\/\/[a-z0-9.-]+\.[a-z]{2,}\//i);
    const assets = [...html.matchAll(/(?:src|href)="(\/dashboard\/assets\/[^"]+)"/g)].map((m) => m[1]);
    expect(assets.length).toBeGreaterThanOrEqual(2);
    let gzipped = index.rawPayload.length;
    for (const url of assets) {
      const res = await t.app.inject({ url, headers: { 'accept-encoding': 'gzip' } });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(res.headers['content-encoding']).toBe('gzip');
      gzipped += res.rawPayload.length;
    }
    expect(gzipped).toBeLessThan(250 * 1024);
  });

  it('serves the service worker at /dashboard/sw.js, revalidated on every load, under the same policy', async () => {
    const res = await t.app.inject({ url: '/dashboard/sw.js' });
    expect(res.statusCode, 'run npm run build first').toBe(200);
    expect(res.headers['content-type']).toBe('application/javascript; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['content-security-policy']).toBe(DASHBOARD_CSP);
    expect(res.body).toBe(readFileSync(join(DASHBOARD_DIST, 'sw.js'), 'utf8'));
    expect(res.body).toContain("addEventListener('push'");
    // Only that one script outside assets/: any other name is a page of the application.
    expect((await t.app.inject({ url: '/dashboard/other.js' })).headers['content-type']).toBe('text/html; charset=utf-8');
  });
});
