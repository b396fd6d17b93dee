import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.js';
import { CLI, cliBuilt, freePort, request, runCli, startCommand, startServer, type Server } from './helpers/cli.js';
import { POSTGRES_URL } from './helpers/db.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import { TcpProxy } from './helpers/tcp-proxy.js';

/** Polls `check` until it holds (or fails after `timeoutMs`). */
async function until(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * `svc listen`: the built command follows a running service's event stream and forwards each event
 * to a receiver on 127.0.0.1, signed per Standard Webhooks with the secret it prints. Between them
 * and the service a TCP proxy cuts the stream, as a network blip or a restart would. The service
 * runs on this file's schema.
 */
describe('svc listen', () => {
  let server: Server;
  let receiver: Receiver;
  let proxy: TcpProxy;
  let base: string;
  let apiKey: string;
  let t: TestApp | null = null;
  const listeners: Server[] = [];

  const create = async (name: string) => {
    const res = await request(`${base}/v1/products`, apiKey, { method: 'POST', body: { name } });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };
  /** What `svc listen --json` printed so far, one object per line. */
  const lines = (listener: Server) =>
    listener
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, any>);
  const forwarded = (listener: Server) => lines(listener).filter((line) => line.id);

  beforeAll(async () => {
    if (!cliBuilt()) throw new Error(`${CLI} is missing: build first with npx tsc -p .`);
    receiver = await startReceiver();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const env: Record<string, string> = { PORT: String(port), LOG_LEVEL: 'warn', SVC_RATE_LIMIT_API_KEY: '100000' };
    const masterKey = randomBytes(32);
    t = await startTestApp({ masterKey });
    apiKey = t.demo.workspaces[0].apiKey;
    const url = `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${t.testDb.schema}`)}`;
    server = await startServer([], { ...env, DATABASE_URL: url, SVC_MASTER_KEY: masterKey.toString('hex') });
    proxy = new TcpProxy(port);
    await proxy.start();
  });
  afterAll(async () => {
    for (const listener of listeners) await listener.stop();
    await server?.stop();
    await proxy?.stop();
    await receiver?.close();
    await t?.close();
  });

  it('forwards each event, signed with the secret it printed, and picks up where it was after the stream drops', async () => {
    const listener = await startCommand(
      ['listen', '--forward-to', `${receiver.url}/hooks`, '--events', 'product.created', '--base-url', `http://127.0.0.1:${proxy.port}`, '--json'],
      { SVC_API_KEY: apiKey },
      /"ready":true/,
    );
    listeners.push(listener);
    const [ready] = lines(listener);
    expect(ready).toMatchObject({ ready: true, forwardTo: `${receiver.url}/hooks`, events: 'product.created' });
    expect(ready.secret).toMatch(/^whsec_[A-Za-z0-9+/]{44}$/);
    const webhook = new Webhook(ready.secret);

    // The stream opens right after the banner: give it a moment before the first write.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const before: string[] = [];
    for (let i = 0; i < 3; i++) before.push(await create(`Listened ${i}`));
    // Not forwarded: not the type asked for.
    expect((await request(`${base}/v1/products/${before[0]}`, apiKey, { method: 'PATCH', body: { name: 'Renamed' } })).status).toBe(200);
    await receiver.waitFor(3, 30_000);

    // The service goes away; events keep happening meanwhile; then it is back.
    await proxy.stop();
    await until(() => lines(listener).some((line) => line.lost), 'the lost stream to be reported');
    const during: string[] = [];
    for (let i = 0; i < 4; i++) during.push(await create(`Written while away ${i}`));
    await proxy.start();
    await receiver.waitFor(7, 60_000);
    const after = await create('After the blip');
    await receiver.waitFor(8, 30_000);
    await until(() => forwarded(listener).length === 8, 'eight lines');

    const products = [...before, ...during, after];
    const events = receiver.requests.map((received) => {
      expect(received.method).toBe('POST');
      expect(received.url).toBe('/hooks');
      expect(received.headers['content-type']).toBe('application/json');
      return { id: received.flatHeaders['webhook-id'], body: webhook.verify(received.body, received.flatHeaders) as { id: string; type: string; subject: { id: string } }, raw: received.body };
    });
    // Each product's creation once, in order, none twice, though the stream was cut in between.
    expect(events.map((e) => e.body.subject.id)).toEqual(products);
    expect(events.every((e) => e.body.type === 'product.created' && e.id === e.body.id)).toBe(true);
    for (const event of events) {
      const stored = await fetch(`${base}/v1/events/${event.id}`, { headers: { authorization: `Bearer ${apiKey}` } });
      expect(event.raw).toBe(await stored.text());
    }
    const printed = forwarded(listener);
    expect(printed.map((line) => [line.type, line.id, line.status])).toEqual(events.map((e) => ['product.created', e.id, 200]));
    for (const line of printed) expect(line.durationMs).toBeGreaterThanOrEqual(0);
    expect(lines(listener).some((line) => line.reconnected && line.after === events[2].id)).toBe(true);
    expect(await listener.stop()).toBe(0);
  }, 120_000);

  it('prints one line per event with time, type, id, the local status and the time it took; a failing receiver is reported, not retried', async () => {
    const failing = await startReceiver(() => ({ status: 503 }));
    try {
      const listener = await startCommand(['listen', '--forward-to', `${failing.url}/down`, '--base-url', base, '--api-key', apiKey], {}, /Ready! .*whsec_\S+/);
      listeners.push(listener);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const id = await create('Refused locally');
      await failing.waitFor(1, 30_000);
      await until(() => /--> \[503\]/.test(listener.output()), 'the printed line');
      const line = listener.output().split('\n').find((l) => l.includes('--> [503]'))!;
      expect(line).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d  product\\.created  evt_\\w{26}  --> \\[503\\] POST ${failing.url}/down \\(\\d+ ms\\)$`));
      const event = new Webhook(/whsec_\S+/.exec(listener.output())![0]).verify(failing.requests[0].body, failing.requests[0].flatHeaders) as { subject: { id: string } };
      expect(event.subject.id).toBe(id);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(failing.requests).toHaveLength(1);
      expect(await listener.stop()).toBe(0);
    } finally {
      await failing.close();
    }
  }, 120_000);

  it('stops with one line and status 1 when the service refuses the credential, and with 2 on a wrong command line', async () => {
    const refused = await runCli(['listen', '--forward-to', `${receiver.url}/x`, '--base-url', base, '--api-key', `svc_sk_${'A'.repeat(36)}`], {});
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toMatch(/^svc: the service refused the stream: UNAUTHENTICATED: .+$/);
    expect(refused.stderr).not.toContain('svc_sk_');
    const badType = await runCli(['listen', '--forward-to', `${receiver.url}/x`, '--base-url', base, '--api-key', apiKey, '--events', 'nope.*'], {});
    expect(badType.code).toBe(1);
    expect(badType.stderr).toMatch(/^svc: the service refused the stream: VALIDATION: Invalid query: query\.type: must be one of: .*product\.\*.*\n$/);
    // Refused before it was ready: no banner, no secret.
    expect(badType.stdout).toBe('');
    // A type of --forward that the stream's own filter does not cover is put to the service too.
    const badRoute = await runCli(['listen', '--forward', `product.*=${receiver.url}/p`, '--forward', `invoice.*=${receiver.url}/i`, '--base-url', base, '--api-key', apiKey], {});
    expect(badRoute.code).toBe(1);
    expect(badRoute.stderr).toMatch(/^svc: the service refused the stream of invoice\.\* events: VALIDATION: Invalid query: query\.type: must be one of: .+\n$/);
    expect(badRoute.stdout).toBe('');
    for (const args of [[], ['--forward-to', 'not a url'], ['--forward-to', 'http://x', '--secret', 'nope'], ['--forward-to', 'http://x', '--bogus'], ['--forward', 'http://x'], ['--forward', 'order.*=ftp://x']]) {
      const wrong = await runCli(['listen', ...args], { SVC_API_KEY: apiKey });
      expect(wrong.code, args.join(' ')).toBe(2);
      expect(wrong.stderr).toMatch(/^svc: /);
    }
    const noKey = await runCli(['listen', '--forward-to', 'http://127.0.0.1:1/x'], { SVC_DATA_DIR: join(tmpdir(), 'svc-listen-nothing-here') });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('SVC_API_KEY');
    const help = await runCli(['listen', '--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('svc listen --forward-to http://localhost:4242/webhooks');
    expect(help.stdout).toContain("--forward 'order.*=http://localhost:4242/orders'");
  }, 120_000);

  it('routes types to different URLs with --forward, and prints each event with --print-json', async () => {
    const other = await startReceiver();
    try {
      const router = await startCommand(
        ['listen', '--forward', `product.*=${receiver.url}/products`, '--forward', `order.*=${other.url}/orders`, '--forward', `order.paid=${receiver.url}/paid`, '--base-url', base, '--api-key', apiKey, '--json'],
        {},
        /"ready":true/,
      );
      listeners.push(router);
      const [ready] = lines(router);
      expect(ready).toMatchObject({ ready: true, events: null, forwards: [{ events: 'product.*', url: `${receiver.url}/products` }, { events: 'order.*', url: `${other.url}/orders` }, { events: 'order.paid', url: `${receiver.url}/paid` }] });
      const printer = await startCommand(['listen', '--print-json', '--events', 'order.*', '--base-url', base, '--api-key', apiKey], {}, /Ready! Printing order\.\* as JSON\. /);
      listeners.push(printer);
      await new Promise((resolve) => setTimeout(resolve, 500));

      const seen = receiver.requests.length;
      const triggered = await runCli(['trigger', 'order.paid', '--base-url', base, '--api-key', apiKey, '--json'], {});
      expect(triggered.code, triggered.stderr).toBe(0);
      const { eventId, subject } = JSON.parse(triggered.stdout);
      // product.created to the first URL, order.created and order.paid to the second, order.paid to the third too.
      await other.waitFor(2, 30_000);
      await receiver.waitFor(seen + 2, 30_000);
      const webhook = new Webhook(ready.secret);
      const got = (r: Receiver, from = 0) => r.requests.slice(from).map((req) => [req.url, (webhook.verify(req.body, req.flatHeaders) as { type: string }).type]);
      expect(got(receiver, seen)).toEqual([['/products', 'product.created'], ['/paid', 'order.paid']]);
      expect(got(other)).toEqual([['/orders', 'order.created'], ['/orders', 'order.paid']]);
      await until(() => forwarded(router).length === 4, 'four lines');
      expect(forwarded(router).filter((l) => l.id === eventId).map((l) => l.url).sort()).toEqual([`${other.url}/orders`, `${receiver.url}/paid`].sort());

      // Standard output holds the events alone, byte for byte as the service stores them.
      await until(() => printer.output().split('\n').length === 3, 'two printed events');
      const printed = printer.output().trimEnd().split('\n');
      expect(printed.map((line) => JSON.parse(line)).map((e) => [e.type, e.subject.id])).toEqual([['order.created', subject.id], ['order.paid', subject.id]]);
      expect(printed[1]).toBe(await (await fetch(`${base}/v1/events/${eventId}`, { headers: { authorization: `Bearer ${apiKey}` } })).text());
      expect(printer.errors()).toMatch(/^Ready! Printing order\.\* as JSON\. Your webhook signing secret is whsec_\S+ \(Ctrl-C to quit\)\n$/);
      expect(await router.stop()).toBe(0);
      expect(await printer.stop()).toBe(0);
    } finally {
      await other.close();
    }
  }, 120_000);

  it('says it cannot reach the service and retries, and is ready only once the stream is accepted', async () => {
    const late = new TcpProxy(Number(new URL(base).port));
    late.port = await freePort();
    const at = `http://127.0.0.1:${late.port}`;
    const listener = await startCommand(['listen', '--forward-to', `${receiver.url}/late`, '--base-url', at, '--api-key', apiKey], {}, /Cannot reach/);
    listeners.push(listener);
    try {
      expect(listener.errors().split('\n')[0]).toBe(`Cannot reach ${at} (ECONNREFUSED), retrying in 0.5 s`);
      expect(listener.output()).toBe('');
      await late.start();
      await until(() => listener.output().startsWith('Ready! Forwarding every event to '), 'the banner', 30_000);
      expect(listener.errors()).not.toContain('Lost the stream');
      const seen = receiver.requests.length;
      const id = await create('Once ready');
      await receiver.waitFor(seen + 1, 30_000);
      expect((JSON.parse(receiver.requests[seen].body) as { subject: { id: string } }).subject.id).toBe(id);
      expect(await listener.stop()).toBe(0);
    } finally {
      await late.stop();
    }
  }, 120_000);
});
