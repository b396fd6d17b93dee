import type { Queryable } from '../../db/db.js';
import { Where } from '../../db/where.js';
import { fetchPage, type Cursor, type Page } from '../../db/keyset.js';
import { toIso } from '../../lib/iso.js';
import { requestHeadersSql } from '../attempts/request-headers.js';

export type DeliveryStatus = 'pending' | 'success' | 'failed' | 'disabled';

export interface DeliveryRow {
  id: string;
  workspace_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  replay_of: string | null;
  status: DeliveryStatus;
  attempt: number;
  created_at: Date;
  delivered_at: Date | null;
  error: string | null;
  response_status: number | null;
  response_time_ms: number | null;
}

export interface DeliveryDetailRow extends DeliveryRow {
  next_attempt_at: Date | null;
  /** The text sent: the row's own payload (pings, replays) or its event's stored body. */
  body: string | null;
  request_headers: unknown;
  response_body: string | null;
  response_headers: unknown;
}

const LIST_COLUMNS = [
  'id', 'workspace_id', 'endpoint_id', 'event_id', 'event_type', 'replay_of', 'status', 'attempt',
  'created_at', 'delivered_at', 'error', 'response_status', 'response_time_ms',
];

export interface DeliveryFilters {
  endpointId?: string;
  eventId?: string;
  status?: DeliveryStatus;
  eventType?: string;
  createdGte?: Date;
  createdLte?: Date;
}

/**
 * The deliveries of an event and every replay of them (and of those), for the eventId filter. A
 * replay has a synthetic event id of its own and names the delivery it copies in replay_of (indexed
 * for replays only). The event's own deliveries need no index of their own: every delivery is
 * written with an id that starts with its event's time (the fan-out's delivery_prefix, and
 * enqueue (engine/outbox/deliveries.ts) for pings and replays, whose synthetic event ids are made at the same instant),
 * so they lie in a range of the primary key as short as the deliveries made in that millisecond.
 * Kept this way, the delivery path writes no index entry for this filter.
 */
const EVENT_FAMILY = `WITH RECURSIVE family AS (
    SELECT id FROM webhook_deliveries WHERE id > $? AND id < $? AND event_id = $?
    UNION
    SELECT d.id FROM webhook_deliveries d JOIN family f ON d.replay_of = f.id
  ) SELECT id FROM family`;

/**
 * The status filter with the status as a literal, not a parameter: a plan made for `status = $n`
 * (a generic plan, kept for a prepared statement) cannot know that the rows it asks for are in the
 * partial indexes of final failures (migrations/013), and walks every delivery of the endpoint.
 */
const STATUS_CONDITIONS: Record<DeliveryStatus, string> = {
  pending: "status = 'pending'",
  success: "status = 'success'",
  failed: "status = 'failed'",
  disabled: "status = 'disabled'",
};

/** The id range of an event's own deliveries ('~' sorts after every id character) and the event id. */
function eventFamilyParams(eventId: string): [string, string, string] {
  const prefix = `whd_${eventId.slice(4, 14)}`;
  return [prefix, `${prefix}~`, eventId];
}

export async function listDeliveries(
  q: Queryable,
  workspaceId: string,
  filters: DeliveryFilters,
  cursor: Cursor | null,
  limit: number,
): Promise<Page<DeliveryRow>> {
  const where = new Where().add('workspace_id = $?', workspaceId);
  if (filters.endpointId) where.add('endpoint_id = $?', filters.endpointId);
  if (filters.eventId) where.add(`id IN (${EVENT_FAMILY})`, ...eventFamilyParams(filters.eventId));
  if (filters.status) where.add(STATUS_CONDITIONS[filters.status]);
  if (filters.eventType) where.add('event_type = $?', filters.eventType);
  if (filters.createdGte) where.add('created_at >= $?', filters.createdGte);
  if (filters.createdLte) where.add('created_at <= $?', filters.createdLte);
  return fetchPage(q, { select: `SELECT ${LIST_COLUMNS.join(', ')} FROM webhook_deliveries`, where, cursor, limit });
}

/**
 * A delivery with its latest attempt's request headers and response. Those are kept once, on the
 * attempt's row (webhook_delivery_attempts): the delivery row's update, written at every attempt,
 * stays narrow. Rows attempted before attempts were kept still carry them on the delivery row.
 */
export async function findDelivery(q: Queryable, workspaceId: string, id: string): Promise<DeliveryDetailRow | null> {
  const [row] = await q.query<DeliveryDetailRow>(
    `SELECT ${LIST_COLUMNS.map((c) => `d.${c}`).join(', ')}, d.next_attempt_at,
            CASE WHEN a.attempt IS NULL THEN d.request_headers ELSE a.request_headers END AS request_headers,
            CASE WHEN a.attempt IS NULL THEN d.response_body ELSE a.response_body END AS response_body,
            CASE WHEN a.attempt IS NULL THEN d.response_headers ELSE a.response_headers END AS response_headers,
            COALESCE(d.payload, e.body) AS body
       FROM webhook_deliveries d
       LEFT JOIN events e ON e.id = d.event_id AND e.workspace_id = d.workspace_id
       LEFT JOIN LATERAL (
         SELECT attempt, ${requestHeadersSql('l')} AS request_headers, response_body, response_headers FROM webhook_delivery_attempts l
          WHERE delivery_id = d.id ORDER BY attempt DESC LIMIT 1
       ) a ON true
      WHERE d.id = $1 AND d.workspace_id = $2`,
    [id, workspaceId],
  );
  return row ?? null;
}

/**
 * An endpoint that stops ordering by subject: its pending deliveries no longer wait for each other
 * (the claim checks only rows with an ordering key, claim.ts).
 */
export async function unorderPendingDeliveries(q: Queryable, endpointId: string): Promise<number> {
  const rows = await q.query(
    `UPDATE webhook_deliveries SET ordering_key = NULL
      WHERE endpoint_id = $1 AND status = 'pending' AND ordering_key IS NOT NULL RETURNING id`,
    [endpointId],
  );
  return rows.length;
}

const iso = (d: Date | null) => (d ? toIso(d) : null);

export function toListView(row: DeliveryRow) {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.event_type,
    workspaceId: row.workspace_id,
    status: row.status,
    attempt: row.attempt,
    createdAt: toIso(row.created_at),
    deliveredAt: iso(row.delivered_at),
    error: row.error,
    responseStatus: row.response_status,
    responseTimeMs: row.response_time_ms,
    replayOf: row.replay_of,
  };
}

/** Header names that could carry a credential are never shown, whatever the sender recorded. */
const HIDDEN_HEADER = /^(authorization|proxy-authorization|cookie)$|secret|token/i;

/** A stored header map as string to string; null when nothing was recorded (no attempt yet). */
export function headerMap(value: unknown, hide: boolean): Record<string, string> | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const out: Record<string, string> = {};
  for (const [name, raw] of Object.entries(value as Record<string, unknown>)) {
    if (raw === null || raw === undefined || (hide && HIDDEN_HEADER.test(name))) continue;
    out[name] = Array.isArray(raw) ? raw.map(String).join(', ') : String(raw);
  }
  return out;
}

export function parseBody(body: string | null): unknown {
  if (body === null) return null;
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}

/** The resource the event is about, read from the body so pings (none) and replays (a copy) agree. */
export function subjectOf(body: unknown): { id: string; type: string } | null {
  const subject = (body as { subject?: { id?: unknown; type?: unknown } } | null)?.subject;
  if (!subject || typeof subject.id !== 'string' || typeof subject.type !== 'string') return null;
  return { id: subject.id, type: subject.type };
}

/**
 * The event of the log a delivery's body is: its own event, or for a replay (of a replay...) the
 * event its copied body carries; null for pings and their replays. The replay's eventId is
 * synthetic, so this is what to follow to the event.
 */
function sourceEventOf(row: DeliveryDetailRow, body: unknown): string | null {
  if (row.event_type === 'webhook.ping') return null;
  if (!row.replay_of) return row.event_id;
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' && id.startsWith('evt_') ? id : null;
}

export function toDetailView(row: DeliveryDetailRow) {
  const requestBody = parseBody(row.body);
  return {
    ...toListView(row),
    sourceEventId: sourceEventOf(row, requestBody),
    nextAttemptAt: iso(row.next_attempt_at),
    requestBody,
    requestHeaders: headerMap(row.request_headers, true),
    responseBody: row.response_body,
    responseHeaders: headerMap(row.response_headers, false),
    subject: subjectOf(requestBody),
  };
}
