import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPersonalAccessToken } from '../src/account/admin.js';
import { loggerOptions } from '../src/http/logger.js';
import { safeEqual } from '../src/lib/secretbox.js';
import { newToken } from '../src/lib/tokens.js';
import { DeliveryWorker } from '../src/engine/delivery/worker.js';
import { startTestApp, userOf, type TestApp } from './helpers/app.js';
import { LogCapture } from './helpers/log.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { snapshot } from './helpers/security.js';

const TOKEN = /svc_(sk|pat)_(test_)?[0-9A-Za-z]{36}/;
const SIGNING_SECRET = /whsec_[A-Za-z0-9+/=_-]{8,}/;

/**
 * Credentials and signing secrets never reach the log or the database in clear. The app logs at
 * trace level with the service's own logger settings while it goes through whole request cycles:
 * keys and tokens created and used, refusals of every kind, webhook endpoints created, their secret
 * rotated and deliveries signed and sent to a real receiver.
 */
describe('secrets in logs and at rest', () => {
  let t: TestApp;
  let log: LogCapture;
  let receiver: Receiver;
  /** Every credential and secret the cycle handled. */
  const secrets: string[] = [];

  beforeAll(async () => {
    log = new LogCapture();
    t = await startTestApp({
      config: { allowPrivateTargets: true, rateLimitUnauthenticated: 5 },
      logger: loggerOptions('trace', log),
    });
    receiver = await startReceiver((_request, index) => (index % 3 === 2 ? { status: 500, body: 'no' } : { status: 200 }));
    const owner = userOf(t.demo, 'owner').token;
    const ws = t.demo.workspaces[0].id;
    secrets.push(owner, ...t.demo.workspaces.flatMap((w) => [w.apiKey, w.testApiKey]), ...t.demo.users.map((u) => u.token));

    // An API key created through the API, then used for reads and writes.
    const created = await t.call(owner, 'POST', `/v1/workspaces/${ws}/api-keys`, { name: 'ci', test: true });
    expect(created.statusCode).toBe(201);
    const key = created.json().key as string;
    secrets.push(key);
    expect((await t.call(key, 'GET', '/v1/me')).statusCode).toBe(200);
    expect((await t.call(key, 'POST', '/v1/products', { name: 'Logged hat' })).statusCode).toBe(201);

    // A personal access token, used on a workspace through the header.
    const pat = await createPersonalAccessToken(t.ctx.db, { userId: userOf(t.demo, 'admin').id, name: 'laptop', test: false }, t.clock.now());
    secrets.push(pat.token);
    expect((await t.call(pat.token, 'GET', '/v1/products', undefined, { 'service-workspace-id': ws })).statusCode).toBe(200);

    // Webhook endpoints: created (secret shown once), rotated, deliveries signed and sent.
    const endpoint = await t.call(key, 'POST', '/v1/webhooks/endpoints', { url: receiver.url, subscribedEvents: ['product.*'] });
    expect(endpoint.statusCode).toBe(201);
    secrets.push(endpoint.json().secret);
    const worker = new DeliveryWorker(t.ctx, { onError: (err, during) => t.app.log.error({ err }, `delivery ${during} failed`) });
    expect((await t.call(key, 'POST', '/v1/products', { name: 'Signed once' })).statusCode).toBe(201);
    await worker.runDue();
    const rotated = await t.call(key, 'POST', `/v1/webhooks/endpoints/${endpoint.json().id}/rotate-secret`);
    expect(rotated.statusCode).toBe(200);
    secrets.push(rotated.json().secret);
    expect((await t.call(key, 'POST', `/v1/webhooks/endpoints/${endpoint.json().id}/send-test-event`)).statusCode).toBe(201);
    expect((await t.call(key, 'POST', '/v1/products', { name: 'Signed twice' })).statusCode).toBe(201);
    await worker.runDue();
    await worker.stop();
    expect(receiver.requests.length).toBeGreaterThanOrEqual(3);
    expect(receiver.requests.some((r) => r.headers['webhook-signature']?.toString().includes(' '))).toBe(true);

    // Refusals: another workspace, bad input, too large, wrong type, a revoked key, then wrong and
    // near-miss credentials up to the per-address limit and past it.
    const nearMiss = key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a');
    const unknown = newToken('api_key', false);
    secrets.push(nearMiss, unknown);
    expect((await t.call(key, 'GET', `/v1/workspaces/${t.demo.workspaces[1].id}/products`)).statusCode).toBe(403);
    expect((await t.call(key, 'POST', '/v1/products', { name: 7, token: key })).statusCode).toBe(400);
    expect((await t.app.inject({ method: 'POST', url: '/v1/products', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: `{"name":"${key}"` })).statusCode).toBe(400);
    expect((await t.call(key, 'POST', '/v1/products', { name: 'x', description: key.repeat(40_000) })).statusCode).toBe(413);
    expect((await t.app.inject({ method: 'POST', url: '/v1/products', headers: { authorization: `Bearer ${key}`, 'content-type': 'text/plain' }, payload: key })).statusCode).toBe(415);
    expect((await t.call(key, 'GET', `/v1/products/${key}`)).statusCode).toBe(404);
    const keyId = created.json().id as string;
    expect((await t.call(owner, 'DELETE', `/v1/workspaces/${ws}/api-keys/${keyId}`)).statusCode).toBe(200);
    expect((await t.call(key, 'GET', '/v1/me')).statusCode).toBe(401);
    // Last, as they end with this address refused (429) for its failed authentications.
    for (const token of [nearMiss, unknown, `${key}x`, key.slice(7), unknown, nearMiss]) {
      expect((await t.call(token, 'GET', '/v1/products')).statusCode).toBeGreaterThanOrEqual(400);
    }
    expect((await t.call(owner, 'GET', '/v1/me')).statusCode).toBe(429);
  }, 120_000);

  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  it('captured a trace-level log of the whole cycle', () => {
    const messages = log.records.map((r) => String(r.msg));
    expect(messages.filter((m) => m === 'incoming request').length).toBeGreaterThan(20);
    expect(messages.filter((m) => m === 'request completed').length).toBeGreaterThan(20);
    expect(t.app.log.level).toBe('trace');
    // Every line a request writes carries its request id (the Request-Id header), from start to end.
    const ids = (msg: string) => log.records.filter((r) => r.msg === msg).map((r) => r.reqId);
    expect(ids('incoming request').every((id) => typeof id === 'string' && id.startsWith('req_'))).toBe(true);
    expect(new Set(ids('request completed'))).toEqual(new Set(ids('incoming request')));
    // A URL holding a credential (a client's mistake) is logged with it replaced.
    expect(log.records.some((r) => String((r.req as { url?: string } | undefined)?.url).includes('/v1/products/[redacted]'))).toBe(true);
  });

  it('never logs a credential or a signing secret, nor the random part of one', () => {
    const text = log.text;
    for (const secret of secrets) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(secret.replace(/^(svc_(sk|pat)_(test_)?|whsec_)/, '').slice(0, 24));
    }
    expect(text).not.toMatch(TOKEN);
    expect(text).not.toMatch(SIGNING_SECRET);
  });

  it('stores no credential or signing secret in clear in any table', async () => {
    const rows = JSON.stringify(await snapshot(t.ctx));
    expect(rows.length).toBeGreaterThan(1000);
    for (const secret of secrets) {
      expect(rows).not.toContain(secret.replace(/^(svc_(sk|pat)_(test_)?|whsec_)/, '').slice(0, 24));
    }
    expect(rows).not.toMatch(TOKEN);
    expect(rows).not.toMatch(SIGNING_SECRET);
    // The signing secrets are there, encrypted: AES-GCM records, not the secret's base64.
    const [endpoint] = await t.ctx.db.query<{ secret_enc: string; previous_secret_enc: string }>('SELECT secret_enc, previous_secret_enc FROM webhook_endpoints');
    expect(endpoint.secret_enc).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(endpoint.previous_secret_enc).toMatch(/^v1\./);
  });
});

describe('constant-time comparison', () => {
  it('safeEqual tells equal strings from different ones of any length and content', () => {
    expect(safeEqual('', '')).toBe(true);
    expect(safeEqual('whsec_abc', 'whsec_abc')).toBe(true);
    expect(safeEqual('whsec_abc', 'whsec_abd')).toBe(false);
    expect(safeEqual('abc', 'abcd')).toBe(false);
    expect(safeEqual('abcd', 'abc')).toBe(false);
    expect(safeEqual('é', 'e\u0301')).toBe(false);
    expect(safeEqual('💩', '💩')).toBe(true);
    // Equal UTF-16 length, different UTF-8 length: compared as bytes, so not equal and no throw.
    expect(safeEqual('éé', 'ab')).toBe(false);
  });

  it('is what the source uses wherever a secret, signature or MAC is compared', () => {
    // No ===/!== against a value named like a secret, signature, MAC or token, except the CRC
    // checksum of a token, which is public (it only catches typos).
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (path.endsWith('.ts')) files.push(path);
      }
    };
    const src = fileURLToPath(new URL('../src', import.meta.url));
    walk(src);
    const compare = /(secret|signature|hmac|\bmac\b|digest|tokenhash)\w*\s*[!=]==|[!=]==\s*\w*(secret|signature|hmac|digest|tokenhash)/i;
    const offenders = files.flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .map((line, i) => ({ where: `${file}:${i + 1}`, line }))
        .filter(({ line }) => compare.test(line) && !/===?\s*(undefined|null|'|"|`)/.test(line)),
    );
    expect(offenders).toEqual([]);
    const pagination = readFileSync(join(src, 'http', 'pagination.ts'), 'utf8');
    expect(pagination).toMatch(/safeEqual\(signature, this\.sign\(/);
  });
});
