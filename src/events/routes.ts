import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/db.js';
import type { ReadCoalescer } from '../http/coalesce.js';
import { ApiError, notFound, validation } from '../http/errors.js';
import type { ListContext } from '../http/list.js';
import { WorkspaceHeader, type Mount } from '../http/mount.js';
import { resource } from '../http/resource.js';
import { isId } from '../lib/ids.js';
import { findSentUnder } from '../engine/outbox/deliveries.js';
import { EventList, EventListQuery } from './schemas.js';
import { findEventBody, listEvents } from '../engine/log/store.js';

const read = { scope: 'workspace', permission: 'workspace:events:read' } as const;

/** What the event routes use of the service. */
export type EventDeps = ListContext & { db: Db; reads: ReadCoalescer };

export function eventRoutes(app: FastifyInstance, deps: EventDeps, mount: Mount): void {
  const { db } = deps;
  const events = resource(app, { path: '/events', tag: 'Events', mount, headers: WorkspaceHeader, item: { name: 'eventId', prefix: 'evt', noun: 'event' }, read, write: read, pages: deps });

  events.list({
    operationId: 'listEvents',
    summary: 'List events, newest first',
    query: EventListQuery,
    response: EventList,
    list: 'events',
    filters: ['type', 'subjectType', 'subjectId'],
    where: ({ type, subjectType, subjectId }) => {
      if (subjectId !== undefined && subjectType === undefined) {
        throw validation('subjectId must be paired with subjectType.', [{ path: 'query.subjectId', message: 'requires subjectType' }]);
      }
      return { type, subjectType, subjectId };
    },
    coalesce: deps.reads,
    rows: ({ owner, where, cursor, limit }) => listEvents(db, owner, where, cursor, limit),
    // Stored bodies go out as they are, so list and retrieve serve the same bytes.
    data: (rows) => rows.map((r) => r.body),
  });

  events.retrieve({
    operationId: 'getEvent',
    summary: 'Retrieve an event, byte-identical to the webhook body',
    response: Type.Ref('Event'),
    handle: async ({ owner, id, reply }) => {
      const body = await findEventBody(db, owner, id);
      if (body === null) throw await missingEvent(db, owner, id);
      return reply.type('application/json; charset=utf-8').send(body);
    },
  });
}

/**
 * The 404 for an id that is no event: when a ping or a replay was sent under it (a delivery's
 * synthetic eventId), the message says so and names the delivery and, for a replay, the event it
 * carries (docs/webhooks.md).
 */
async function missingEvent(db: Db, workspaceId: string, eventId: string): Promise<ApiError> {
  const sent = isId('evt', eventId) ? await findSentUnder(db, workspaceId, eventId) : null;
  if (!sent) return notFound('event');
  if (!sent.replayOf) {
    return new ApiError('NOT_FOUND', `${eventId} is not an event of the log: it is the id test delivery ${sent.id} (${sent.eventType}) was sent under.`);
  }
  const carried = sent.sourceEventId ? `; the event it carries is ${sent.sourceEventId}` : '';
  return new ApiError('NOT_FOUND', `${eventId} is not an event of the log: it is the id replay ${sent.id} of delivery ${sent.replayOf} was sent under${carried}.`);
}
