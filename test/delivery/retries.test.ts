import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { attemptOffsets, maxAttempts } from '../../src/engine/delivery/schedule.js';
import { startTestApp, testConfig, type TestApp } from '../helpers/app.js';
import { addEndpoint, createProduct, deliveriesOf, endpointState, testWorker } from '../helpers/delivery.js';
import { startReceiver, type Behaviour, type Receiver } from '../helpers/receiver.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

describe('retry schedule', () => {
  it('allows 11 attempts at the documented offsets with the default schedule', () => {
    const { retryScheduleMs } = testConfig();
    expect(maxAttempts(retryScheduleMs)).toBe(11);
    expect(attemptOffsets(retryScheduleMs)).toEqual([0, 5, 35, 155, 455, 1055, 1775, 2495, 3215, 3935, 4655].map((m) => m * MINUTE));
  });
});

describe('delivery attempts and retries', () => {
  let t: TestApp;
  let clock: ManualClock;
  const receivers: Receiver[] = [];
  const receiver = async (script?: (r: unknown, i: number) => Behaviour) => {
    const r = await startReceiver(script);
    receivers.push(r);
    return r;
  };
  beforeAll(async () => {
    clock = new ManualClock();
    t = await startTestApp({ clock, config: { allowPrivateTargets: true, deliveryTimeoutMs: 300 } });
  });
  afterAll(async () => {
    for (const r of receivers) await r.close();
    await t.close();
  });

  it('makes exactly 11 attempts against a receiver that always answers 500, then marks the delivery failed', async () => {
    const failing = await receiver(() => ({ status: 500, body: 'boom' }));
    const { id: endpointId } = await addEndpoint(t, failing.url);
    await createProduct(t);
    const worker = testWorker(t);
    const start = clock.now().getTime();
    const offsets = [0, 5 * MINUTE, 35 * MINUTE, 2 * HOUR + 35 * MINUTE, 7 * HOUR + 35 * MINUTE, 17 * HOUR + 35 * MINUTE];
    for (let i = 0; i < 5; i++) offsets.push(offsets[offsets.length - 1] + 12 * HOUR);

    for (let i = 0; i < offsets.length; i++) {
      // Nothing happens a millisecond before the attempt is due.
      clock.set(new Date(start + offsets[i] - 1));
      if (i > 0) expect(await worker.runDue()).toBe(0);
      clock.set(new Date(start + offsets[i]));
      expect(await worker.runDue()).toBe(1);
      expect(failing.requests).toHaveLength(i + 1);
      const [row] = await deliveriesOf(t, endpointId);
      expect(row.attempt).toBe(i + 1);
      expect(row.last_attempt_at!.getTime()).toBe(start + offsets[i]);
      expect(row).toMatchObject({ error: 'HTTP 500', response_status: 500, response_body: 'boom', delivered_at: null });
      if (i < offsets.length - 1) {
        expect(row.status).toBe('pending');
        expect(row.next_attempt_at!.getTime()).toBe(start + offsets[i + 1]);
      } else {
        expect(row.status).toBe('failed');
        expect(row.next_attempt_at).toBeNull();
      }
    }
    const timestamps = failing.requests.map((r) => Number(r.flatHeaders['webhook-timestamp']) * 1000 - start);
    expect(timestamps).toEqual(offsets);
    const [row] = await deliveriesOf(t, endpointId);
    expect(new Set(failing.requests.map((r) => r.flatHeaders['webhook-id']))).toEqual(new Set([row.id]));
    expect(new Set(failing.requests.map((r) => r.body)).size).toBe(1);
    expect(await endpointState(t, endpointId)).toMatchObject({ active: true, consecutive_failures: 1 });

    clock.advance(30 * 24 * HOUR);
    expect(await worker.runDue()).toBe(0);
    expect(failing.requests).toHaveLength(11);
    await t.ctx.db.query('DELETE FROM webhook_endpoints WHERE id = $1', [endpointId]);
  });

  it('counts a redirect, a hang past the time-out, a refused and a reset connection as failed attempts with readable errors', async () => {
    const target = await receiver();
    const redirecting = await receiver(() => ({ redirect: `${target.url}/elsewhere`, status: 301 }));
    const hanging = await receiver(() => ({ hang: true }));
    const resetting = await receiver(() => ({ destroy: true, reset: true }));
    const closing = await receiver(() => ({ destroy: true }));
    const closedPort = await freePort();
    const endpoints = {
      redirect: (await addEndpoint(t, redirecting.url)).id,
      hang: (await addEndpoint(t, hanging.url)).id,
      refused: (await addEndpoint(t, `http://127.0.0.1:${closedPort}/`)).id,
      reset: (await addEndpoint(t, resetting.url)).id,
      closed: (await addEndpoint(t, closing.url)).id,
      dns: (await addEndpoint(t, 'http://svc-test-host.invalid/')).id,
    };
    await createProduct(t);
    expect(await testWorker(t).runDue()).toBe(6);

    const rows = Object.fromEntries(await Promise.all(Object.entries(endpoints).map(async ([k, id]) => [k, (await deliveriesOf(t, id))[0]] as const)));
    for (const row of Object.values(rows)) {
      expect(row).toMatchObject({ status: 'pending', attempt: 1, delivered_at: null });
      expect(row.next_attempt_at!.getTime()).toBe(clock.now().getTime() + 5 * MINUTE);
      expect(row.response_time_ms).toBeGreaterThanOrEqual(0);
    }
    expect(rows.redirect).toMatchObject({ error: 'HTTP 301 (redirects are not followed)', response_status: 301 });
    expect(rows.redirect.response_headers!.location).toBe(`${target.url}/elsewhere`);
    expect(target.requests).toHaveLength(0);
    expect(rows.hang).toMatchObject({ error: 'timeout: no complete response within 300 ms', response_status: null });
    expect(hanging.requests).toHaveLength(1);
    expect(rows.refused).toMatchObject({ error: 'connection refused', response_status: null });
    expect(rows.reset).toMatchObject({ error: 'connection reset by the receiver', response_status: null });
    expect(rows.closed).toMatchObject({ error: 'connection closed by the receiver before a complete response', response_status: null });
    expect(rows.dns.error).toMatch(/^DNS lookup failed: /);
    await t.ctx.db.query('DELETE FROM webhook_endpoints WHERE id = ANY($1::text[])', [Object.values(endpoints)]);
  });

  it('succeeds on a retry with the same webhook-id, and keeps at most 64 KiB of a response body', async () => {
    const flaky = await receiver((_r, i) => (i === 0 ? { status: 503 } : { status: 200, body: 'x'.repeat(100 * 1024) }));
    const { id: endpointId } = await addEndpoint(t, flaky.url);
    await createProduct(t);
    const worker = testWorker(t);
    await worker.runDue();
    const first = clock.now().getTime();
    clock.advance(5 * MINUTE);
    await worker.runDue();
    const [row] = await deliveriesOf(t, endpointId);
    expect(row).toMatchObject({ status: 'success', attempt: 2, error: null, response_status: 200, next_attempt_at: null });
    expect(row.delivered_at!.getTime()).toBe(first + 5 * MINUTE);
    expect(row.response_body).toHaveLength(64 * 1024);
    expect(flaky.requests.map((r) => r.flatHeaders['webhook-id'])).toEqual([row.id, row.id]);
    expect(await endpointState(t, endpointId)).toMatchObject({ consecutive_failures: 0 });
    await t.ctx.db.query('DELETE FROM webhook_endpoints WHERE id = $1', [endpointId]);
  });

  it('logs response bodies and headers verbatim, whatever characters they hold, in one batch with plain ones', async () => {
    // Quotes, backslashes, braces, commas and the word NULL mean something in an array literal or in JSON.
    const awkward = '{"a":"b\\"c"}, {x} \\ NULL "" \u00e9\u4e2d\u{1F600} \t\r\n end';
    const strange = await receiver((_r, i) => (i % 2 === 0 ? { status: 200, body: awkward, headers: { 'x-note': 'say "hi", {ok} \\ NULL' } } : { status: 200, body: '' }));
    const { id: endpointId } = await addEndpoint(t, strange.url);
    for (let i = 0; i < 4; i++) await createProduct(t, `Awkward ${i}`);
    expect(await testWorker(t).runDue()).toBe(4);
    const rows = await deliveriesOf(t, endpointId);
    expect(rows.map((r) => r.status)).toEqual(['success', 'success', 'success', 'success']);
    const bodies = rows.map((r) => r.response_body).sort();
    expect(bodies).toEqual(['', '', awkward, awkward]);
    const notes = rows.map((r) => r.response_headers!['x-note']).filter(Boolean);
    expect(notes).toEqual(['say "hi", {ok} \\ NULL', 'say "hi", {ok} \\ NULL']);
    await t.ctx.db.query('DELETE FROM webhook_endpoints WHERE id = $1', [endpointId]);
  });

  it('follows a configured schedule: its length plus one attempts', async () => {
    const short = await startTestApp({ clock, config: { allowPrivateTargets: true, retryScheduleMs: [1000, 2000] } });
    const failing = await receiver(() => ({ status: 500 }));
    try {
      const { id: endpointId } = await addEndpoint(short, failing.url);
      await createProduct(short);
      const worker = testWorker(short);
      for (const step of [0, 1000, 2000]) {
        clock.advance(step);
        expect(await worker.runDue()).toBe(1);
      }
      clock.advance(HOUR);
      expect(await worker.runDue()).toBe(0);
      const [row] = await deliveriesOf(short, endpointId);
      expect(row).toMatchObject({ status: 'failed', attempt: 3 });
      expect(failing.requests).toHaveLength(3);
    } finally {
      await short.close();
    }
  });
});

/** A port nothing listens on: bound once, then released. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
