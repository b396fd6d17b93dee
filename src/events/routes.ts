import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { sendCoalesced } from '../http/coalesce.js';
import { ApiError, notFound, validation } from '../http/errors.js';
import { pageJson, pageUrls, requestCursor } from '../http/list.js';
import { IdParam, WorkspaceHeader, type Mount } from '../http/mount.js';
import { DEFAULT_LIMIT } from '../http/pagination.js';
import { isId } from '../lib/ids.js';
import { findSentUnder } from '../outbox/deliveries.js';
import { EventList, EventListQuery } from './schemas.js';
import { findEventBody, listEvents } from './store.js';

const read = { scope: 'workspace', permission: 'workspace:events:read' } as const;

export function eventRoutes(app: FastifyInstance, ctx: AppContext, mount: Mount): void {
  app.get<{ Querystring: Static<typeof EventListQuery> }>('/events', {
    config: { auth: read },
    schema: {
      tags: ['Events'],
      operationId: 'listEvents',
      summary: 'List events, newest first',
      params: mount.params(),
      headers: WorkspaceHeader,
      querystring: EventListQuery,
      response: { 200: EventList },
    },
    handler: async (request, reply) => {
      const { limit = DEFAULT_LIMIT, page, type, subjectType, subjectId } = request.query;
      if (subjectId !== undefined && subjectType === undefined) {
        throw validation('subjectId must be paired with subjectType.', [{ path: 'query.subjectId', message: 'requires subjectType' }]);
      }
      const workspaceId = request.workspace!.id;
      const binding = { list: 'events', scope: workspaceId, limit, filters: { type, subjectType, subjectId } };
      const cursor = requestCursor(ctx, page, binding);
      return sendCoalesced(ctx, request, reply, workspaceId, async () => {
        const result = await listEvents(ctx.db, workspaceId, { type, subjectType, subjectId }, cursor, limit);
        // Stored bodies go out as they are, so list and retrieve serve the same bytes.
        return pageJson(result.rows.map((r) => r.body), pageUrls(ctx, request, binding, result));
      });
    },
  });

  app.get<{ Params: { eventId: string } }>('/events/:eventId', {
    config: { auth: read },
    schema: {
      tags: ['Events'],
      operationId: 'getEvent',
      summary: 'Retrieve an event, byte-identical to the webhook body',
      params: mount.params({ eventId: IdParam('evt', 'Event id (evt_...).') }),
      headers: WorkspaceHeader,
      response: { 200: Type.Ref('Event') },
    },
    handler: async (request, reply) => {
      const { eventId } = request.params;
      const body = isId('evt', eventId) ? await findEventBody(ctx.db, request.workspace!.id, eventId) : null;
      if (body === null) throw await missingEvent(ctx, request.workspace!.id, eventId);
      return reply.type('application/json; charset=utf-8').send(body);
    },
  });
}


/**
 * The 404 for an id that is no event: when a ping or a replay was sent under it (a delivery's
 * synthetic eventId), the message says so and names the delivery and, for a replay, the event it
 * carries (docs/webhooks.md).
 */
async function missingEvent(ctx: AppContext, workspaceId: string, eventId: string): Promise<ApiError> {
  const sent = isId('evt', eventId) ? await findSentUnder(ctx.db, workspaceId, eventId) : null;
  if (!sent) return notFound('event');
  if (!sent.replayOf) {
    return new ApiError('NOT_FOUND', `${eventId} is not an event of the log: it is the id test delivery ${sent.id} (${sent.eventType}) was sent under.`);
  }
  const carried = sent.sourceEventId ? `; the event it carries is ${sent.sourceEventId}` : '';
  return new ApiError('NOT_FOUND', `${eventId} is not an event of the log: it is the id replay ${sent.id} of delivery ${sent.replayOf} was sent under${carried}.`);
}
