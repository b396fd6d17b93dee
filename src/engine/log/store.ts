import type { Queryable } from '../../db/db.js';
import { Where } from '../../db/where.js';
import { fetchPage, type Cursor, type Page } from '../../db/keyset.js';
import { newId } from '../../lib/ids.js';
import { toIso } from '../../lib/iso.js';
import type { EventType } from './catalog.js';

export interface Subject {
  type: string;
  id: string;
  url: string;
}

export interface StoredEvent {
  id: string;
  workspaceId: string;
  type: EventType;
  subject: Subject | null;
  /** The exact JSON text served by the API and POSTed to receivers. */
  body: string;
  createdAt: Date;
}

export interface EventInput {
  workspaceId: string;
  type: EventType;
  subject: Subject | null;
  at: Date;
  /**
   * The traceparent of the request that made the change, for the spans of its deliveries
   * (lib/trace.ts); by default the span in progress when the outbox writes it.
   */
  trace?: string | null;
}

/**
 * Serialises the event once, in the order id, type, created, subject (docs/receiving-webhooks.md#what-arrives): this text is what is stored and sent.
 * Events are written by the outbox only (src/engine/outbox/).
 */
export function buildEvent(input: EventInput): StoredEvent {
  const id = newId('evt', input.at);
  const payload: Record<string, unknown> = { id, type: input.type, created: toIso(input.at) };
  if (input.subject) payload.subject = { id: input.subject.id, type: input.subject.type, url: input.subject.url };
  return { id, workspaceId: input.workspaceId, type: input.type, subject: input.subject, body: JSON.stringify(payload), createdAt: input.at };
}

export async function findEventBody(q: Queryable, workspaceId: string, eventId: string): Promise<string | null> {
  const [row] = await q.query<{ body: string }>('SELECT body FROM events WHERE id = $1 AND workspace_id = $2', [eventId, workspaceId]);
  return row?.body ?? null;
}

export interface EventFilters {
  type?: string;
  subjectType?: string;
  subjectId?: string;
}

export async function listEvents(
  q: Queryable,
  workspaceId: string,
  filters: EventFilters,
  cursor: Cursor | null,
  limit: number,
): Promise<Page<{ id: string; created_at: Date; body: string }>> {
  const where = new Where().add('workspace_id = $?', workspaceId);
  if (filters.type) where.add('type = $?', filters.type);
  if (filters.subjectType) where.add('subject_type = $?', filters.subjectType);
  if (filters.subjectId) where.add('subject_id = $?', filters.subjectId);
  return fetchPage(q, { select: 'SELECT id, created_at, body FROM events', where, cursor, limit });
}
