import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProducts, creation } from '../../src/products/create-batch.js';
import { writeIn } from '../../src/engine/outbox/outbox.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { addEndpoint, closeAppAndReceiver, createProduct, eventually, openAppAndReceiver, testWorker, verifyBySpec } from '../helpers/delivery.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { killAll, spawnWorker } from '../helpers/worker-process.js';

describe('transactional outbox', () => {
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => ({ t, receiver } = await openAppAndReceiver({ config: { allowPrivateTargets: true } })));
  afterAll(() => closeAppAndReceiver(t, receiver));

  it('leaves no event and no delivery behind a rolled-back product change', async () => {
    await addEndpoint(t, receiver.url);
    const workspaceId = t.demo.workspaces[0].id;
    let productId = '';
    await expect(
      t.ctx.db.tx(async (q) => {
        const now = t.clock.now();
        // The write the API makes (product, event and deliveries in one statement), inside a transaction that then fails.
        const made = creation(workspaceId, { name: 'Never' }, now);
        productId = made.values.id;
        const written = await writeIn(q, createProducts([made]));
        expect(written).toHaveLength(1);
        expect(await q.query('SELECT id FROM webhook_deliveries WHERE event_id IN (SELECT id FROM events WHERE subject_id = $1)', [productId])).toHaveLength(1);
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');

    const count = async (sql: string, params: unknown[]) => (await t.ctx.db.query<{ n: number }>(sql, params))[0].n;
    expect(await count('SELECT count(*)::int AS n FROM products WHERE id = $1', [productId])).toBe(0);
    expect(await count('SELECT count(*)::int AS n FROM events WHERE subject_id = $1', [productId])).toBe(0);
    expect(await count('SELECT count(*)::int AS n FROM webhook_deliveries', [])).toBe(0);
    expect(await testWorker(t).runDue()).toBe(0);
    expect(receiver.requests).toHaveLength(0);
  });
});

describe('worker processes killed mid-delivery', () => {
  const masterKey = randomBytes(32);
  const children: ChildProcess[] = [];
  let t: TestApp;
  let receiver: Receiver;
  let holding = true;

  beforeAll(async () => {
    t = await startTestApp({ masterKey, config: { allowPrivateTargets: true } });
    // The first 100 requests are answered; later ones hang while `holding`, so the first worker
    // dies with its attempts in flight.
    receiver = await startReceiver((_r, i) => (i >= 100 && holding ? { hang: true } : { status: 200 }));
  });
  afterAll(async () => {
    killAll(children);
    await receiver?.close();
    await t?.close();
  });

  function worker(): ChildProcess {
    const child = spawnWorker(t, masterKey, {
      SVC_WORKER_CONCURRENCY: '8',
      SVC_LEASE: '5s',
      SVC_DELIVERY_TIMEOUT: '2s',
      SVC_POLL_INTERVAL: '100ms',
      SVC_RETRY_SCHEDULE: '1s',
    });
    child.on('exit', (code) => {
      if (code !== null && code !== 0) console.error(`svc worker exited with ${code}: ${child.stderrText()}`);
    });
    children.push(child);
    return child;
  }

  it('delivers every row after a SIGKILL, repeating only the killed attempts and with the same webhook-id', async () => {
    const endpoints = [await addEndpoint(t, `${receiver.url}/a`), await addEndpoint(t, `${receiver.url}/b`)];
    for (let i = 0; i < 150; i++) await createProduct(t, `Hat ${i}`);
    const rows = await t.ctx.db.query<{ id: string; endpoint_id: string; body: string }>(
      'SELECT d.id, d.endpoint_id, e.body FROM webhook_deliveries d JOIN events e ON e.id = d.event_id',
    );
    expect(rows).toHaveLength(300);

    const first = worker();
    await receiver.waitFor(108, 60_000);
    // The answered attempts' outcomes are written in batches, just after their answers: an answer
    // whose outcome is not yet written when the process dies is sent again, as at-least-once allows.
    // The kill comes once they are written, so that only the hanging attempts are repeated.
    await eventually(async () => {
      const [{ n }] = await t.ctx.db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'success'");
      return n === 100;
    }, 30_000);
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    expect(first.signalCode).toBe('SIGKILL');
    // At least the 8 slots' worth; slow attempts give their slots up, so each endpoint's share may add more.
    const inFlightAtKill = receiver.requests.slice(100).map((r) => r.flatHeaders['webhook-id']);
    expect(inFlightAtKill.length).toBeGreaterThanOrEqual(8);

    holding = false;
    worker();
    worker();
    await eventually(async () => {
      const [{ n }] = await t.ctx.db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'success'");
      return n === 300;
    }, 60_000);

    const byId = new Map<string, typeof receiver.requests>();
    for (const r of receiver.requests) byId.set(r.flatHeaders['webhook-id'], [...(byId.get(r.flatHeaders['webhook-id']) ?? []), r]);
    expect([...byId.keys()].sort()).toEqual(rows.map((r) => r.id).sort());
    const secrets = new Map(endpoints.map((e) => [e.id, e.secret]));
    for (const row of rows) {
      const received = byId.get(row.id)!;
      for (const r of received) {
        expect(r.body).toBe(row.body);
        expect(verifyBySpec(secrets.get(row.endpoint_id)!, r.flatHeaders, r.raw)).toBe(true);
      }
      // Only what the killed worker had in flight is seen twice.
      expect(received.length, row.id).toBe(inFlightAtKill.includes(row.id) ? 2 : 1);
    }
  });
});
