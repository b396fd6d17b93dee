import { expect } from 'vitest';
import type { components } from '../../sdk/src/schema.js';
import { newId } from '../../src/lib/ids.js';
import { ManualClock, type TestApp } from './app.js';
import { eventually, openAppAndReceiver } from './delivery.js';
import type { Receiver } from './receiver.js';

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

/** A recovery as the API answers it (the OpenAPI document's WebhookRecovery). */
export type Recovery = components['schemas']['WebhookRecovery'];

/**
 * An app and a receiver (openAppAndReceiver) for the recovery tests: private targets allowed, a
 * retention of 30 days, a poll once a minute, and a manual clock set six hours before the real time.
 */
export async function openRecoveryApp(): Promise<{ t: TestApp; receiver: Receiver; clock: ManualClock }> {
  const clock = new ManualClock(Date.now() - 6 * HOUR);
  const { t, receiver } = await openAppAndReceiver({ clock, config: { allowPrivateTargets: true, retentionMs: 30 * DAY, pollIntervalMs: 60_000, rateLimitApiKey: 1_000_000 } });
  return { t, receiver, clock };
}

/**
 * Recoveries and deliveries of the app `app` returns (started in a beforeAll, so read at each
 * call), through the API key and the database of its first demo workspace.
 */
export function recoveryCalls(app: () => TestApp) {
  const recover = (endpointId: string, body: unknown, token = app().demo.workspaces[0].apiKey) =>
    app().call(token, 'POST', `/v1/webhooks/endpoints/${endpointId}/recover`, body);
  const getRecovery = async (id: string): Promise<Recovery> => {
    const res = await app().call(app().demo.workspaces[0].apiKey, 'GET', `/v1/webhooks/recoveries/${id}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  const finished = async (id: string): Promise<Recovery> => {
    let last: Recovery | null = null;
    await eventually(async () => (last = await getRecovery(id)).status !== 'running', 60_000);
    return last!;
  };
  const replaysOf = (endpointId: string) =>
    app().ctx.db.query<{ id: string; replay_of: string; payload: string; status: string }>(
      'SELECT id, replay_of, payload, status FROM webhook_deliveries WHERE endpoint_id = $1 AND replay_of IS NOT NULL ORDER BY id',
      [endpointId],
    );
  /** `n` finished deliveries of an endpoint made at the clock's time, written directly: a body each, as pings and replays carry. */
  const seed = async (endpointId: string, n: number, status = 'failed'): Promise<string[]> => {
    const now = app().clock.now();
    const ids = Array.from({ length: n }, () => newId('whd', now));
    await app().ctx.db.query(
      `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, payload, status, attempt, created_at)
       SELECT d.id, $2, $3, 'evt_' || substr(d.id, 5), 'webhook.ping', json_build_object('seed', d.id)::text, $4, 11, $5
         FROM unnest($1::text[]) AS d (id)`,
      [ids, app().demo.workspaces[0].id, endpointId, status, now],
    );
    return ids;
  };

  return { recover, getRecovery, finished, replaysOf, seed };
}
