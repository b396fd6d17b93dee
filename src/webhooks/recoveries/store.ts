import type { Db, Queryable } from '../../db/db.js';
import { fetchPage, type Cursor, type Page } from '../../db/keyset.js';
import { Where } from '../../db/where.js';
import { newId } from '../../lib/ids.js';
import { toIso } from '../../lib/iso.js';
import { queueReplays, type Original } from '../deliveries/replay.js';
import { endpointInactive } from '../endpoints/schemas.js';
import { lockEndpoint } from '../endpoints/store.js';
import type { Recoverable } from './schemas.js';

/** Which deliveries of an endpoint a recovery replays. */
export interface RecoveryWindow {
  endpointId: string;
  since: Date;
  until: Date;
  statuses: Recoverable[];
}

export interface RecoveryRow {
  id: string;
  workspace_id: string;
  endpoint_id: string;
  window_since: Date;
  window_until: Date;
  statuses: Recoverable[];
  status: 'running' | 'completed' | 'failed';
  count: number;
  replayed: number;
  skipped: number;
  error: string | null;
  cursor_created_at: Date;
  cursor_id: string;
  created_at: Date;
  completed_at: Date | null;
}

const COLUMNS =
  'id, workspace_id, endpoint_id, window_since, window_until, statuses, status, count, replayed, skipped, error, cursor_created_at, cursor_id, created_at, completed_at';

/**
 * The deliveries of the window, as `d` ($1 endpoint, $2 since, $3 until, $4 statuses). Served by
 * the index webhook_deliveries_endpoint_page (endpoint_id, created_at, id): a range of it, each row's
 * status read from the table.
 */
const MATCHING = `d.endpoint_id = $1 AND d.created_at >= $2 AND d.created_at <= $3 AND d.status = ANY($4::text[])`;

/**
 * True for a delivery of the window that must not be replayed again: one of its replays is pending
 * or delivered, or is itself in the window with a matching status (that replay is recovered in its
 * place, so one body never goes out twice from one recovery). Found through webhook_deliveries_replays.
 */
const COVERED = `EXISTS (
    SELECT 1 FROM webhook_deliveries r
     WHERE r.replay_of = d.id
       AND (r.status IN ('pending', 'success') OR (r.status = ANY($4::text[]) AND r.created_at >= $2 AND r.created_at <= $3))
  )`;

const windowParams = (w: RecoveryWindow) => [w.endpointId, w.since, w.until, w.statuses];

/** How many deliveries a recovery of this window would replay now: one COUNT over the index range. */
export async function countRecoverable(q: Queryable, window: RecoveryWindow): Promise<number> {
  const [row] = await q.query<{ count: number }>(
    `SELECT count(*)::int AS count FROM webhook_deliveries d WHERE ${MATCHING} AND NOT ${COVERED}`,
    windowParams(window),
  );
  return row.count;
}

/**
 * Records a recovery of `count` deliveries; with nothing to replay it is completed at once. Its
 * cursor starts before every delivery of the window: (since, ''), the empty id sorting first.
 */
export async function createRecovery(q: Queryable, workspaceId: string, window: RecoveryWindow, count: number, now: Date): Promise<RecoveryRow> {
  const done = count === 0;
  const [row] = await q.query<RecoveryRow>(
    `INSERT INTO webhook_recoveries (id, workspace_id, endpoint_id, window_since, window_until, statuses, status, count, cursor_created_at, cursor_id, created_at, completed_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $4, '', $9, $10) RETURNING ${COLUMNS}`,
    [newId('whr', now), workspaceId, window.endpointId, window.since, window.until, window.statuses, done ? 'completed' : 'running', count, now, done ? now : null],
  );
  return row;
}

export async function findRecovery(q: Queryable, workspaceId: string, id: string): Promise<RecoveryRow | null> {
  const [row] = await q.query<RecoveryRow>(`SELECT ${COLUMNS} FROM webhook_recoveries WHERE id = $1 AND workspace_id = $2`, [id, workspaceId]);
  return row ?? null;
}

export async function listRecoveries(q: Queryable, workspaceId: string, endpointId: string, cursor: Cursor | null, limit: number): Promise<Page<RecoveryRow>> {
  const where = new Where().add('endpoint_id = $?', endpointId).add('workspace_id = $?', workspaceId);
  return fetchPage(q, { select: `SELECT ${COLUMNS} FROM webhook_recoveries`, where, cursor, limit });
}

/**
 * Takes a running recovery whose lease has run out (or that no runner has taken yet) for `owner`,
 * until `now + leaseMs`: the oldest, or the one named by `id`. SKIP LOCKED: runners of several
 * processes looking at once take different rows, and none waits for another.
 */
export async function claimRecovery(db: Db, owner: string, now: Date, leaseMs: number, id?: string): Promise<string | null> {
  const [row] = await db.query<{ id: string }>(
    `UPDATE webhook_recoveries SET lease_owner = $1, lease_until = $3
      WHERE id = (
        SELECT id FROM webhook_recoveries
         WHERE status = 'running' AND (lease_until IS NULL OR lease_until <= $2)${id ? ' AND id = $4' : ''}
         ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED
      ) RETURNING id`,
    [owner, now, new Date(now.getTime() + leaseMs), ...(id ? [id] : [])],
  );
  return row?.id ?? null;
}

/** Gives a recovery back (a runner stopping mid-run), so another may take it up without waiting for the lease. */
export async function releaseRecovery(db: Db, id: string, owner: string): Promise<void> {
  await db.query(`UPDATE webhook_recoveries SET lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2 AND status = 'running'`, [id, owner]);
}

/** What one batch did: `lost` when the recovery is no longer this runner's (or no longer running). */
export type BatchOutcome = { state: 'lost' } | { state: 'more' | 'done'; replayed: number; skipped: number };

interface Candidate extends Original {
  created_at: Date;
  covered: boolean;
}

/**
 * One batch of a recovery, in one short transaction: the next `size` deliveries of the window after
 * the cursor, in (created_at, id) order; a replay queued for each that is not covered (COVERED);
 * the cursor moved past the last and the counts added, all committed together. A process stopped
 * between two batches leaves the cursor where the last committed batch put it, and no delivery is
 * replayed twice by resuming.
 *
 * The endpoint row is locked (FOR UPDATE) first, as the single replay route locks it: replays of one
 * endpoint are written one transaction at a time, so two recoveries of overlapping windows (or a
 * recovery and a single replay) cannot both find a delivery unreplayed. The lock is held for one
 * batch only. An endpoint paused or deleted meanwhile ends the recovery as failed.
 */
export async function runBatch(db: Db, id: string, owner: string, now: Date, leaseMs: number, size: number): Promise<BatchOutcome> {
  return db.tx(async (q) => {
    const [recovery] = await q.query<RecoveryRow & { lease_owner: string | null }>(
      `SELECT ${COLUMNS}, lease_owner FROM webhook_recoveries WHERE id = $1 FOR UPDATE`,
      [id],
    );
    if (!recovery || recovery.status !== 'running' || recovery.lease_owner !== owner) return { state: 'lost' };
    const endpoint = await lockEndpoint(q, recovery.workspace_id, recovery.endpoint_id);
    if (!endpoint || endpoint.deleted_at || !endpoint.active) {
      const reason = endpoint ? endpointInactive(endpoint).message : 'The webhook endpoint no longer exists.';
      await q.query(
        `UPDATE webhook_recoveries SET status = 'failed', error = $2, completed_at = $3, lease_owner = NULL, lease_until = NULL WHERE id = $1`,
        [id, reason, now],
      );
      return { state: 'done', replayed: 0, skipped: 0 };
    }
    const window = { endpointId: recovery.endpoint_id, since: recovery.window_since, until: recovery.window_until, statuses: recovery.statuses };
    const rows = await q.query<Candidate>(
      `SELECT d.id, d.created_at, d.event_type, COALESCE(d.payload, e.body) AS body, ${COVERED} AS covered
         FROM webhook_deliveries d
         LEFT JOIN events e ON e.id = d.event_id AND e.workspace_id = d.workspace_id
        WHERE ${MATCHING} AND (d.created_at, d.id) > ($5, $6)
        ORDER BY d.created_at, d.id
        LIMIT $7`,
      [...windowParams(window), recovery.cursor_created_at, recovery.cursor_id, size],
    );
    // A body can be gone only when retention took the event: nothing is left to send.
    const originals = rows.filter((row) => !row.covered && row.body !== null);
    const replayed = (await queueReplays(q, recovery.workspace_id, endpoint, originals, now)).length;
    const skipped = rows.length - replayed;
    const last = rows.at(-1);
    const done = rows.length < size;
    await q.query(
      `UPDATE webhook_recoveries
          SET replayed = replayed + $2, skipped = skipped + $3, cursor_created_at = $4, cursor_id = $5,
              status = CASE WHEN $6 THEN 'completed' ELSE status END,
              completed_at = CASE WHEN $6 THEN $7::timestamptz END,
              lease_owner = CASE WHEN $6 THEN NULL ELSE lease_owner END,
              lease_until = CASE WHEN $6 THEN NULL ELSE $8::timestamptz END
        WHERE id = $1`,
      [id, replayed, skipped, last?.created_at ?? recovery.cursor_created_at, last?.id ?? recovery.cursor_id, done, now, new Date(now.getTime() + leaseMs)],
    );
    return { state: done ? 'done' : 'more', replayed, skipped };
  });
}

export function toRecoveryView(row: RecoveryRow) {
  return {
    object: 'webhook_recovery' as const,
    id: row.id,
    endpointId: row.endpoint_id,
    since: toIso(row.window_since),
    until: toIso(row.window_until),
    statuses: row.statuses,
    status: row.status,
    count: row.count,
    replayed: row.replayed,
    skipped: row.skipped,
    error: row.error,
    createdAt: toIso(row.created_at),
    completedAt: row.completed_at ? toIso(row.completed_at) : null,
  };
}
