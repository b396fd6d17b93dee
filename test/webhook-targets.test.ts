import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.js';

const URL_A = 'https://hooks.example.com/a';

/**
 * An endpoint whose host is, or resolves to, an address the sender refuses is
 * refused when it is created or changed, with a message naming the setting that allows it, rather
 * than accepted and then failing every attempt.
 */
describe('webhook endpoint targets', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await startTestApp({ config: { rateLimitApiKey: 1_000_000 } });
    key = t.demo.workspaces[0].apiKey;
  });
  afterAll(() => t?.close());

  const create = async (url: string) => {
    const res = await t.call(key, 'POST', '/v1/webhooks/endpoints', { url, subscribedEvents: ['product.*'] });
    expect(res.statusCode, res.body).toBe(201);
    return res.json();
  };

  it('refuses a host that is or resolves to a private address, naming the setting that allows it', async () => {
    const before = (await t.call(key, 'GET', '/v1/webhooks/endpoints?limit=100')).json().data.length;
    const setting = 'endpoints must be reachable on the public internet (SVC_ALLOW_PRIVATE_TARGETS=1 allows private targets, for local development only)';
    const cases: Array<[string, string]> = [
      ['https://localhost:4000/hook', `localhost resolves to 127.0.0.1, not a public address (loopback); ${setting}`],
      ['https://127.0.0.1/hook', `127.0.0.1 is not a public address (loopback); ${setting}`],
      ['https://[::1]:4000/hook', `::1 is not a public address (loopback); ${setting}`],
      ['https://10.1.2.3/hook', `10.1.2.3 is not a public address (private); ${setting}`],
      ['https://192.168.0.10:8443/hook', `192.168.0.10 is not a public address (private); ${setting}`],
      ['https://169.254.169.254/latest/meta-data/', `169.254.169.254 is not a public address (link-local); ${setting}`],
      ['https://[::ffff:7f00:1]/hook', `::ffff:7f00:1 is not a public address (loopback); ${setting}`],
      ['http://hooks.example.com/a', 'must start with https:// (or amqp://, amqps://, nats://, tls:// for a broker; http:// needs SVC_ALLOW_PRIVATE_TARGETS=1, for local development only)'],
    ];
    for (const [url, why] of cases) {
      const res = await t.call(key, 'POST', '/v1/webhooks/endpoints', { url, subscribedEvents: ['product.*'] });
      expect(res.statusCode, url).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'VALIDATION', message: `Invalid url: ${why}.`, details: [{ path: 'body.url', message: why }] });
    }
    const endpoint = await create(URL_A);
    const moved = await t.call(key, 'PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, { url: 'https://localhost:4000/hook' });
    expect(moved.statusCode).toBe(400);
    expect(moved.json().error.message).toContain('SVC_ALLOW_PRIVATE_TARGETS');
    expect((await t.call(key, 'GET', `/v1/webhooks/endpoints/${endpoint.id}`)).json().url).toBe(URL_A);
    expect((await t.call(key, 'GET', '/v1/webhooks/endpoints?limit=100')).json().data.length).toBe(before + 1);
    // A name that does not resolve is accepted: the sender checks the address of every attempt.
    expect((await create('https://hooks.svc.invalid/a')).url).toBe('https://hooks.svc.invalid/a');
  });

  it('accepts a private host where SVC_ALLOW_PRIVATE_TARGETS is set', async () => {
    const local = await startTestApp({ config: { allowPrivateTargets: true } });
    try {
      for (const url of ['https://localhost:4000/hook', 'http://127.0.0.1:8080/hook', 'https://10.1.2.3/hook']) {
        const res = await local.call(local.demo.workspaces[0].apiKey, 'POST', '/v1/webhooks/endpoints', { url, subscribedEvents: ['product.*'] });
        expect(res.statusCode, url).toBe(201);
      }
    } finally {
      await local.close();
    }
  });
});
