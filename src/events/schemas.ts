import { Type } from '@sinclair/typebox';
import { ListOf } from '../http/list.js';
import { PageQuery } from '../http/pagination.js';
import { EVENT_TYPES, type EventType } from './catalog.js';

/**
 * A filter on one event type of the catalog (catalog.ts, its single source): a type outside it is
 * refused with the list of types, rather than answered with an empty list that hides a typo.
 */
export const EventTypeFilter = (description: string) => Type.Unsafe<EventType>({ type: 'string', enum: [...EVENT_TYPES], description });

export const Event = Type.Object(
  {
    id: Type.String({ description: 'evt_...' }),
    type: Type.String({ description: 'Event type, e.g. product.created.' }),
    created: Type.String({ format: 'date-time', description: 'Time of emission (ISO 8601, UTC, milliseconds).' }),
    subject: Type.Optional(
      Type.Object({
        id: Type.String(),
        type: Type.String({ description: 'e.g. product' }),
        url: Type.String({ description: 'Path of the resource retrieve endpoint, e.g. /v1/products/{id}.' }),
      }),
    ),
  },
  { $id: 'Event', description: 'An event. The body is byte-identical to the one POSTed to webhook endpoints.' },
);

export const EventList = ListOf(Type.Ref('Event'), 'Events of the workspace, newest first.');

export const EventListQuery = Type.Object(
  {
    ...PageQuery,
    type: Type.Optional(EventTypeFilter('Exact event type, from the catalog.')),
    subjectType: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Subject type, e.g. product.' })),
    subjectId: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Subject id; requires subjectType.' })),
  },
  { additionalProperties: false },
);
