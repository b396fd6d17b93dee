import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { checkTargetUrl, classifyAddress, guardedLookup } from '../../src/engine/destinations/ssrf.js';
import type { TestApp } from '../helpers/app.js';
import { addEndpoint, closeAppAndReceiver, createProduct, deliveriesOf, openAppAndReceiver, testWorker } from '../helpers/delivery.js';
import type { Receiver } from '../helpers/receiver.js';

describe('address classifier', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['169.254.0.1', 'link-local'],
    ['100.64.0.1', 'shared (CGNAT)'],
    ['100.127.255.255', 'shared (CGNAT)'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'private'],
    ['fd12:3456:789a::1', 'private'],
    ['fe80::1', 'link-local'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['0:0:0:0:0:ffff:c0a8:101', 'private'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['64:ff9b::127.0.0.1', 'loopback'],
  ])('refuses %s (%s)', (address, reason) => {
    expect(classifyAddress(address)).toBe(reason);
  });

  it.each(['8.8.8.8', '1.1.1.1', '93.184.216.34', '172.15.255.255', '172.32.0.1', '100.63.255.255', '100.128.0.1', '192.167.255.255', '169.253.255.255', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::8.8.8.8'])(
    'allows public %s',
    (address) => {
      expect(classifyAddress(address)).toBeNull();
    },
  );

  it('treats anything but an IP address as invalid', () => {
    expect(classifyAddress('localhost')).toBe('invalid');
    expect(classifyAddress('')).toBe('invalid');
  });

  it('allows only https URLs unless private targets are allowed', () => {
    expect(checkTargetUrl('https://example.com/hook', false)).toBeNull();
    expect(checkTargetUrl('http://example.com/hook', false)).toMatch(/only https/);
    expect(checkTargetUrl('http://example.com/hook', true)).toBeNull();
    expect(checkTargetUrl('ftp://example.com/hook', true)).toMatch(/only https/);
    expect(checkTargetUrl('not a url', true)).toMatch(/not a valid URL/);
  });

  it('refuses a name that resolves to a loopback address', async () => {
    const error = await new Promise<Error | null>((resolve) => guardedLookup('localhost', { all: true }, (e) => resolve(e)));
    expect(error?.message).toMatch(/^refused to connect to localhost: it resolves to (127\.0\.0\.1|::1) \(loopback address\)$/);
  });
});

describe('deliveries to private targets with SVC_ALLOW_PRIVATE_TARGETS off', () => {
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => ({ t, receiver } = await openAppAndReceiver({ clock: new ManualClock(), config: { allowPrivateTargets: false } })));
  afterAll(() => closeAppAndReceiver(t, receiver));

  it('fails each attempt with a readable error and never connects', async () => {
    const targets = {
      name: `https://localhost:${receiver.port}/hook`,
      ipv4: `https://127.0.0.1:${receiver.port}/hook`,
      ipv6: `https://[::1]:${receiver.port}/hook`,
      mapped: `https://[::ffff:127.0.0.1]:${receiver.port}/hook`,
      metadata: 'https://169.254.169.254/latest/meta-data/',
      http: `http://127.0.0.1:${receiver.port}/hook`,
    };
    const endpoints = Object.fromEntries(
      await Promise.all(Object.entries(targets).map(async ([k, url]) => [k, (await addEndpoint(t, url)).id] as const)),
    );
    await createProduct(t);
    expect(await testWorker(t).runDue()).toBe(6);

    const errors: Record<string, string | null> = {};
    for (const [k, id] of Object.entries(endpoints)) {
      const [row] = await deliveriesOf(t, id);
      expect(row).toMatchObject({ status: 'pending', attempt: 1, response_status: null, delivered_at: null });
      expect(row.next_attempt_at!.getTime()).toBe(t.clock.now().getTime() + 5 * 60_000);
      errors[k] = row.error;
    }
    expect(errors.name).toMatch(/^refused to connect to localhost: it resolves to .* \(loopback address\)$/);
    expect(errors.ipv4).toBe('refused to connect to 127.0.0.1 (loopback address)');
    expect(errors.ipv6).toBe('refused to connect to ::1 (loopback address)');
    expect(errors.mapped).toMatch(/^refused to connect to ::ffff:7f00:1 \(loopback address\)$/);
    expect(errors.metadata).toBe('refused to connect to 169.254.169.254 (link-local address)');
    expect(errors.http).toBe('refused: only https:// endpoint URLs are allowed, got http://');
    expect(receiver.requests).toHaveLength(0);
    expect(receiver.connections).toBe(0);
  });
});
