import type { Queryable } from '../db/db.js';
import { Where } from '../db/where.js';
import { fetchPage, type Cursor, type Page } from '../db/keyset.js';
import { toIso } from '../lib/iso.js';

interface NotificationRow {
  id: string;
  workspace_id: string;
  type: string;
  subject: Record<string, unknown> | null;
  message: string;
  created_at: Date;
  read_at: Date | null;
}

export function toView(row: NotificationRow) {
  return {
    id: row.id,
    type: row.type,
    workspaceId: row.workspace_id,
    subject: row.subject,
    message: row.message,
    createdAt: toIso(row.created_at),
    readAt: row.read_at ? toIso(row.read_at) : null,
  };
}

/** A user's notifications across every workspace, newest first; with `unread`, only those not yet read. */
export async function listNotifications(q: Queryable, userId: string, filters: { unread?: boolean }, cursor: Cursor | null, limit: number): Promise<Page<NotificationRow>> {
  const where = new Where().add('user_id = $?', userId);
  if (filters.unread === true) where.add('read_at IS NULL');
  if (filters.unread === false) where.add('read_at IS NOT NULL');
  return fetchPage(q, {
    select: 'SELECT id, workspace_id, type, subject, message, created_at, read_at FROM notifications',
    where,
    cursor,
    limit,
  });
}

/** Marks a user's notification read (the first read's time stays); null when the user has no such notification. */
export async function markNotificationRead(q: Queryable, userId: string, id: string, now: Date): Promise<NotificationRow | null> {
  const [row] = await q.query<NotificationRow>(
    `UPDATE notifications SET read_at = COALESCE(read_at, $3) WHERE id = $1 AND user_id = $2
     RETURNING id, workspace_id, type, subject, message, created_at, read_at`,
    [id, userId, now],
  );
  return row ?? null;
}
