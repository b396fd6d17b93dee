import { createHash } from 'node:crypto';
import type { Db, Queryable } from '../../db/db.js';
import { validation } from '../../http/errors.js';
import { newId } from '../../lib/ids.js';
import { toIso } from '../../lib/iso.js';
import type { SecretBox } from '../../lib/secretbox.js';
import { pushServiceOf, type Subscription } from './subscription.js';

/** Devices a user may register: the list is a small result set (docs/api.md#lists), and each one gets every push. */
export const MAX_DEVICES = 20;

interface DeviceRow {
  id: string;
  user_id: string;
  name: string;
  push_service: string;
  created_at: Date;
  last_used_at: Date | null;
}

/** A device as a push needs it: its subscription opened. */
export interface Target {
  deviceId: string;
  userId: string;
  subscription: Subscription;
}

const COLUMNS = 'id, user_id, name, push_service, created_at, last_used_at';

export function toView(row: DeviceRow) {
  return {
    id: row.id,
    name: row.name,
    pushService: row.push_service,
    createdAt: toIso(row.created_at),
    lastUsedAt: row.last_used_at ? toIso(row.last_used_at) : null,
  };
}

/** The same subscription always has the same hash: a browser registered again updates its row. */
function endpointHash(endpoint: string): string {
  return createHash('sha256').update(endpoint).digest('hex');
}

/** A user's devices, oldest first. */
export async function listDevices(q: Queryable, userId: string): Promise<DeviceRow[]> {
  return q.query<DeviceRow>(`SELECT ${COLUMNS} FROM push_devices WHERE user_id = $1 ORDER BY created_at, id`, [userId]);
}

/**
 * Registers a browser's subscription for a user, or updates the row of the same subscription (its
 * keys and name). The user's row is locked first, so two registrations at once cannot pass the
 * limit together.
 */
export async function saveDevice(
  db: Db,
  secrets: SecretBox,
  input: { userId: string; name: string; subscription: Subscription },
  now: Date,
): Promise<DeviceRow> {
  const hash = endpointHash(input.subscription.endpoint);
  const sealed = secrets.encrypt(JSON.stringify(input.subscription));
  return db.tx(async (q) => {
    await q.query('SELECT id FROM users WHERE id = $1 FOR UPDATE', [input.userId]);
    const [{ count, known }] = await q.query<{ count: number; known: boolean }>(
      'SELECT count(*)::int AS count, bool_or(endpoint_hash = $2) AS known FROM push_devices WHERE user_id = $1',
      [input.userId, hash],
    );
    if (!known && count >= MAX_DEVICES) {
      throw validation(`You have ${MAX_DEVICES} push devices already, the most a user may have: remove one first.`, [
        { path: 'body.endpoint', message: `at most ${MAX_DEVICES} devices per user` },
      ]);
    }
    const [row] = await q.query<DeviceRow>(
      `INSERT INTO push_devices (id, user_id, name, endpoint_hash, push_service, subscription_enc, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (user_id, endpoint_hash) DO UPDATE SET name = EXCLUDED.name, push_service = EXCLUDED.push_service, subscription_enc = EXCLUDED.subscription_enc
       RETURNING ${COLUMNS}`,
      [newId('pdv', now), input.userId, input.name, hash, pushServiceOf(input.subscription.endpoint), sealed, now],
    );
    return row;
  });
}

/** Removes a user's device; false when the user has no such device. */
export async function deleteDevice(q: Queryable, userId: string, id: string): Promise<boolean> {
  const rows = await q.query('DELETE FROM push_devices WHERE id = $1 AND user_id = $2 RETURNING id', [id, userId]);
  return rows.length > 0;
}

/** Every device of these users, its subscription opened, for sending. */
export async function targetsOf(q: Queryable, secrets: SecretBox, userIds: string[]): Promise<Target[]> {
  if (userIds.length === 0) return [];
  const rows = await q.query<{ id: string; user_id: string; subscription_enc: string }>(
    'SELECT id, user_id, subscription_enc FROM push_devices WHERE user_id = ANY($1::text[]) ORDER BY id',
    [userIds],
  );
  return rows.map((r) => ({
    deviceId: r.id,
    userId: r.user_id,
    // Read once per push: kept out of the box's cache, which holds the signing secrets of deliveries.
    subscription: JSON.parse(secrets.decryptOnce(r.subscription_enc)) as Subscription,
  }));
}

/** The push service said the subscription is gone (404, 410): the device goes with it. */
export async function removeGone(q: Queryable, deviceId: string): Promise<void> {
  await q.query('DELETE FROM push_devices WHERE id = $1', [deviceId]);
}

/** The push service accepted a message for the device. */
export async function markUsed(q: Queryable, deviceId: string, now: Date): Promise<void> {
  await q.query('UPDATE push_devices SET last_used_at = $2 WHERE id = $1', [deviceId, now]);
}
