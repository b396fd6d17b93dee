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

/** A user's notifications across every workspace, newest first. */
export async function listNotifications(q: Queryable, userId: string, cursor: Cursor | null, limit: number): Promise<Page<NotificationRow>> {
  const where = new Where().add('user_id = $?', userId);
  return fetchPage(q, {
    select: 'SELECT id, workspace_id, type, subject, message, created_at, read_at FROM notifications',
    where,
    cursor,
    limit,
  });
}
