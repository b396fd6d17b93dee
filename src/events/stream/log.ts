import type { Queryable } from '../../db/db.js';
import type { LogEvent, Position } from './position.js';

/**
 * Events of a workspace after `position`, oldest first, at most `limit`; only these `types` when
 * given. The (workspace_id, created_at, id) index serves it, read backwards. `id > '~'` matches no
 * id (ids compare byte by byte, COLLATE "C", and '~' sorts after every id character): how a
 * position "after the whole millisecond" is written.
 */
export async function readAfter(q: Queryable, workspaceId: string, position: Position, types: readonly string[] | null, limit: number): Promise<LogEvent[]> {
  const params: unknown[] = [workspaceId, new Date(position.at), position.id ?? '~', limit];
  if (types) params.push(types);
  const rows = await q.query<{ id: string; type: string; created_at: Date; body: string }>(
    `SELECT id, type, created_at, body FROM events
      WHERE workspace_id = $1 AND (created_at, id) > ($2::timestamptz, $3::text)${types ? ' AND type = ANY($5::text[])' : ''}
      ORDER BY created_at, id LIMIT $4`,
    params,
  );
  return rows.map((r) => ({ id: r.id, type: r.type, at: r.created_at.getTime(), body: r.body }));
}

/** Of these workspaces, each at its position, those whose log has events after it: one statement for all. */
export async function workspacesWithNews(q: Queryable, tails: { workspaceId: string; position: Position }[]): Promise<string[]> {
  if (tails.length === 0) return [];
  const rows = await q.query<{ workspace_id: string }>(
    `SELECT t.workspace_id FROM unnest($1::text[], $2::timestamptz[], $3::text[]) AS t (workspace_id, at, id)
      WHERE EXISTS (SELECT 1 FROM events e WHERE e.workspace_id = t.workspace_id COLLATE "C" AND (e.created_at, e.id) > (t.at, t.id COLLATE "C"))`,
    [tails.map((t) => t.workspaceId), tails.map((t) => new Date(t.position.at)), tails.map((t) => t.position.id ?? '~')],
  );
  return rows.map((r) => r.workspace_id);
}
