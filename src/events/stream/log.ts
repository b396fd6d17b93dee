import type { Queryable } from '../../db/db.js';
import { END, type LogEvent, type Position } from './position.js';

/**
 * Events of a workspace after `after`, in the log's order, at most `limit`; only these `types` when
 * given. The workspace's batches come from their position index, each event by its primary key.
 */
export async function readAfter(q: Queryable, workspaceId: string, after: Position, types: readonly string[] | null, limit: number): Promise<LogEvent[]> {
  const params: unknown[] = [workspaceId, after.batch, after.index, limit];
  if (types) params.push(types);
  const rows = await q.query<{ id: string; type: string; body: string; batch: number; index: number }>(
    `SELECT e.id, e.type, e.body, b.position AS batch, x.n::int AS index
       FROM event_batches b CROSS JOIN LATERAL unnest(b.event_ids) WITH ORDINALITY AS x (id, n)
       JOIN events e ON e.id = x.id
      WHERE b.workspace_id = $1 AND b.position >= $2 AND (b.position, x.n) > ($2, $3)${types ? ' AND e.type = ANY($5::text[])' : ''}
      ORDER BY b.position, x.n LIMIT $4`,
    params,
  );
  return rows.map((r) => ({ id: r.id, type: r.type, body: r.body, position: { batch: r.batch, index: r.index } }));
}

/** The end of a workspace's log now: after its last positioned batch. */
export async function endOf(q: Queryable, workspaceId: string): Promise<Position> {
  const [row] = await q.query<{ batch: number | null }>('SELECT max(position) AS batch FROM event_batches WHERE workspace_id = $1 AND position IS NOT NULL', [
    workspaceId,
  ]);
  return { batch: row?.batch ?? 0, index: END };
}

/**
 * The place of event `eventId` of the workspace; null when the workspace has no such event, and
 * `batch` null while its batch has no position yet.
 */
export async function placeOf(q: Queryable, workspaceId: string, eventId: string): Promise<{ batch: number | null; index: number } | null> {
  const [row] = await q.query<{ batch: number | null; index: number }>(
    `SELECT b.position AS batch, array_position(b.event_ids, e.id) AS index
       FROM events e JOIN event_batches b ON b.id = e.batch_id WHERE e.id = $1 AND e.workspace_id = $2`,
    [eventId, workspaceId],
  );
  return row ?? null;
}

/** Of these workspaces, each at its head, those whose log has batches after it: one statement for all. */
export async function workspacesWithNews(q: Queryable, tails: { workspaceId: string; head: Position }[]): Promise<string[]> {
  if (tails.length === 0) return [];
  const rows = await q.query<{ workspace_id: string }>(
    `SELECT t.workspace_id FROM unnest($1::text[], $2::bigint[]) AS t (workspace_id, head)
      WHERE EXISTS (SELECT 1 FROM event_batches b WHERE b.workspace_id = t.workspace_id COLLATE "C" AND b.position > t.head)`,
    [tails.map((t) => t.workspaceId), tails.map((t) => t.head.batch)],
  );
  return rows.map((r) => r.workspace_id);
}
