import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/db.js';
import type { ReadCoalescer } from '../http/coalesce.js';
import { validation } from '../http/errors.js';
import type { ListContext } from '../http/list.js';
import { WorkspaceHeader, type Mount } from '../http/mount.js';
import { resource } from '../http/resource.js';
import { EventList, EventListQuery } from './schemas.js';
import { findEventBody, listEvents } from './store.js';

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
      return body === null ? null : reply.type('application/json; charset=utf-8').send(body);
    },
  });
}
