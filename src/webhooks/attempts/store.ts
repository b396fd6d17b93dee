import type { Queryable } from '../../db/db.js';
import { Where } from '../../db/where.js';
import { fetchPage, type Cursor, type Page } from '../../db/keyset.js';
import { toIso } from '../../lib/iso.js';
import { headerMap } from '../deliveries/store.js';
import { requestHeadersSql } from './request-headers.js';

/**
 * The attempts log (`webhook_delivery_attempts`): written by the engine's outcome statement
 * (../engine/outcome.ts), read here and by the endpoint statistics (stats.ts).
 */
export interface AttemptRow {
  attempt: number;
  started_at: Date;
  response_status: number | null;
  response_time_ms: number | null;
  error: string | null;
  request_headers: unknown;
  response_headers: unknown;
  response_body: string | null;
  /** The keyset of the page (pagination.ts): the start time, then the attempt number as text. */
  created_at: Date;
  id: string;
}

/**
 * One page of a delivery's attempts, newest first: by start time, then number. A delivery's
 * attempts follow one another (the next is scheduled once the last is recorded), so this is also
 * the order of their numbers; a delivery has a dozen at most, found by the primary key.
 */
export async function listAttempts(
  q: Queryable,
  workspaceId: string,
  deliveryId: string,
  cursor: Cursor | null,
  limit: number,
): Promise<Page<AttemptRow>> {
  const where = new Where().add('delivery_id = $?', deliveryId).add('workspace_id = $?', workspaceId);
  // The cursor's id is the attempt number as text; the parameter takes the column's type.
  return fetchPage(q, {
    select: `SELECT attempt, started_at, response_status, response_time_ms, error, ${requestHeadersSql('a')} AS request_headers,
                    response_headers, response_body, started_at AS created_at, attempt::text AS id
               FROM webhook_delivery_attempts a`,
    where,
    createdColumn: 'started_at',
    idColumn: 'attempt',
    cursor,
    limit,
  });
}

/** Whether the delivery exists in the workspace (its attempts list is a 404 otherwise). */
export async function deliveryExists(q: Queryable, workspaceId: string, deliveryId: string): Promise<boolean> {
  const rows = await q.query('SELECT 1 FROM webhook_deliveries WHERE id = $1 AND workspace_id = $2', [deliveryId, workspaceId]);
  return rows.length > 0;
}

export function toAttemptView(row: AttemptRow) {
  return {
    attempt: row.attempt,
    startedAt: toIso(row.started_at),
    responseStatus: row.response_status,
    responseTimeMs: row.response_time_ms,
    error: row.error,
    requestHeaders: headerMap(row.request_headers, true),
    responseHeaders: headerMap(row.response_headers, false),
    responseBody: row.response_body,
  };
}
