import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import type { DeliveryWorker } from '../../src/engine/delivery/worker.js';
import { startTestApp, userOf, type TestApp } from '../helpers/app.js';
import { addEndpoint, createProduct, deliveriesOf, endpointState, testWorker } from '../helpers/delivery.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

const RETRY_MS = 60_000;

/**
 * A one-retry schedule keeps each failed delivery to two attempts; the counting and the
 * auto-disable do not depend on the schedule's length.
 */
describe('auto-disable after 5 consecutive failed deliveries', () => {
  let t: TestApp;
  let clock: ManualClock;
  let worker: DeliveryWorker;
  let failing: Receiver;
  let watcher: Receiver;
  let failingId: string;
  let watcherId: string;
  let answer = 500;

  beforeAll(async () => {
    clock = new ManualClock();
    t = await startTestApp({ clock, config: { allowPrivateTargets: true, retryScheduleMs: [RETRY_MS] } });
    worker = testWorker(t);
    failing = await startReceiver(() => ({ status: answer }));
    watcher = await startReceiver();
    failingId = (await addEndpoint(t, failing.url, ['product.*', 'webhook.endpoint.auto_disabled'])).id;
    watcherId = (await addEndpoint(t, watcher.url, ['webhook.*'])).id;
  });
  afterAll(async () => {
    await failing.close();
    await watcher.close();
    await t.close();
  });

  /** One product event whose delivery to the failing endpoint goes through both attempts. */
  async function failedDelivery(): Promise<void> {
    await createProduct(t);
    await worker.runDue();
    clock.advance(RETRY_MS);
    await worker.runDue();
  }

  it('resets the count on a success in between', async () => {
    for (let i = 1; i <= 4; i++) {
      await failedDelivery();
      expect(await endpointState(t, failingId)).toMatchObject({ active: true, consecutive_failures: i });
    }
    answer = 200;
    await createProduct(t);
    await worker.runDue();
    expect(await endpointState(t, failingId)).toMatchObject({ active: true, consecutive_failures: 0 });
    clock.advance(1000);
    answer = 500;
    for (let i = 1; i <= 4; i++) await failedDelivery();
    expect(await endpointState(t, failingId)).toMatchObject({ active: true, disabled_reason: null, consecutive_failures: 4 });
    const statuses = (await deliveriesOf(t, failingId)).map((d) => d.status);
    expect(statuses).toEqual([...Array(4).fill('failed'), 'success', ...Array(4).fill('failed')]);
  });

  it('disables the endpoint at the fifth, turning its queued deliveries disabled, and emits the event', async () => {
    await createProduct(t);
    await worker.runDue();
    // A second delivery is waiting for its retry when the fifth failure lands.
    clock.advance(RETRY_MS / 2);
    await createProduct(t);
    await worker.runDue();
    clock.advance(RETRY_MS / 2);
    await worker.runDue();

    expect(await endpointState(t, failingId)).toMatchObject({ active: false, disabled_reason: 'auto', consecutive_failures: 5 });
    const rows = await deliveriesOf(t, failingId);
    const queued = rows[rows.length - 2];
    expect(queued).toMatchObject({ event_type: 'product.created', status: 'disabled', attempt: 1, next_attempt_at: null });

    const [event] = await t.ctx.db.query<{ id: string; body: string; workspace_id: string }>(
      "SELECT id, body, workspace_id FROM events WHERE type = 'webhook.endpoint.auto_disabled'",
    );
    expect(event.workspace_id).toBe(t.demo.workspaces[0].id);
    expect(JSON.parse(event.body)).toEqual({
      id: event.id,
      type: 'webhook.endpoint.auto_disabled',
      created: clock.now().toISOString(),
      subject: { id: failingId, type: 'webhook_endpoint', url: `/v1/webhooks/endpoints/${failingId}` },
    });
    // The disabled endpoint is subscribed too: it gets a row, and no request.
    expect(rows[rows.length - 1]).toMatchObject({ event_id: event.id, status: 'disabled', attempt: 0 });

    const requestsBefore = failing.requests.length;
    await worker.runDue();
    expect(failing.requests).toHaveLength(requestsBefore);
    const toWatcher = await deliveriesOf(t, watcherId);
    expect(toWatcher).toHaveLength(1);
    expect(toWatcher[0]).toMatchObject({ event_id: event.id, status: 'success' });
    expect(watcher.requests.map((r) => r.body)).toEqual([event.body]);
  });

  it('notifies exactly the users who can read the workspace webhooks', async () => {
    const rows = await t.ctx.db.query<{ user_id: string; workspace_id: string; type: string; subject: unknown; message: string; read_at: Date | null }>(
      'SELECT user_id, workspace_id, type, subject, message, read_at FROM notifications ORDER BY user_id',
    );
    const expected = ['owner', 'admin', 'viewer'].map((role) => userOf(t.demo, role as 'owner').id).sort();
    expect(rows.map((r) => r.user_id)).toEqual(expected);
    expect(rows.map((r) => r.user_id)).not.toContain(userOf(t.demo, 'outsider').id);
    for (const row of rows) {
      expect(row).toMatchObject({
        workspace_id: t.demo.workspaces[0].id,
        type: 'webhook.endpoint.auto_disabled',
        subject: { type: 'webhook_endpoint', id: failingId, url: `/v1/webhooks/endpoints/${failingId}` },
        read_at: null,
      });
      expect(row.message).toContain(failingId);
      expect(row.message).toContain('5 consecutive failed deliveries');
      // Read by people (the dashboard, a push): what to do, not which API call makes it.
      expect(row.message).toMatch(/re-enable the endpoint and replay what it missed\.$/);
    }
  });

  it('keeps later events as disabled rows without any request', async () => {
    const requestsBefore = failing.requests.length;
    clock.advance(1000);
    await createProduct(t);
    clock.advance(RETRY_MS);
    expect(await worker.runDue()).toBe(0);
    const rows = await deliveriesOf(t, failingId);
    expect(rows[rows.length - 1]).toMatchObject({ event_type: 'product.created', status: 'disabled', attempt: 0, next_attempt_at: null });
    expect(failing.requests).toHaveLength(requestsBefore);
    // Nothing else in this workspace produced a second notification or event.
    const [{ count }] = await t.ctx.db.query<{ count: number }>("SELECT count(*)::int AS count FROM events WHERE type = 'webhook.endpoint.auto_disabled'");
    expect(count).toBe(1);
  });
});

describe('auto-disable on 410 Gone', () => {
  let t: TestApp;
  let clock: ManualClock;
  let worker: DeliveryWorker;
  let gone: Receiver;
  let goneId: string;

  beforeAll(async () => {
    clock = new ManualClock();
    t = await startTestApp({ clock, config: { allowPrivateTargets: true, retryScheduleMs: [RETRY_MS] } });
    worker = testWorker(t);
    gone = await startReceiver(() => ({ status: 410 }));
    goneId = (await addEndpoint(t, gone.url)).id;
  });
  afterAll(async () => {
    await gone.close();
    await t.close();
  });

  it('disables the endpoint at the first 410, with reason gone, the event and the notifications, and sends nothing more', async () => {
    await createProduct(t);
    await worker.runDue();
    expect(gone.requests).toHaveLength(1);
    expect(await endpointState(t, goneId)).toMatchObject({ active: false, disabled_reason: 'gone' });
    const [row] = await deliveriesOf(t, goneId);
    expect(row).toMatchObject({ status: 'disabled', attempt: 1, response_status: 410, next_attempt_at: null });

    const events = await t.ctx.db.query<{ body: string }>("SELECT body FROM events WHERE type = 'webhook.endpoint.auto_disabled'");
    expect(events.map((e) => JSON.parse(e.body).subject.id)).toEqual([goneId]);
    const notes = await t.ctx.db.query<{ type: string; message: string }>('SELECT type, message FROM notifications');
    expect(notes.length).toBeGreaterThan(0);
    for (const note of notes) {
      expect(note.type).toBe('webhook.endpoint.auto_disabled');
      expect(note.message).toContain('410 Gone');
    }
    const api = await t.call(userOf(t.demo, 'owner').token, 'GET', `/v1/webhooks/endpoints/${goneId}`, undefined, { 'service-workspace-id': t.demo.workspaces[0].id });
    expect(api.json()).toMatchObject({ active: false, disabledReason: 'gone' });

    clock.advance(RETRY_MS);
    await createProduct(t);
    await worker.runDue();
    expect(gone.requests).toHaveLength(1);
  });
});
