import { Type, type TObject } from '@sinclair/typebox';
import { exampleId } from '../http/examples.js';
import { ListOf } from '../http/list.js';
import { PageQuery } from '../http/pagination.js';
import { EVENT_CATALOG, EVENT_TYPES, EventTypeFilter, type EventType } from '../engine/log/catalog.js';

export { EventTypeFilter };

/** `product.created` → `ProductCreatedEvent`: the name of a type's payload schema. */
export function eventSchemaName(type: string): string {
  return type.split(/[._]/).map((word) => word[0].toUpperCase() + word.slice(1)).join('') + 'Event';
}

export const EventTypeName = Type.Unsafe<EventType>({
  type: 'string',
  enum: [...EVENT_TYPES],
  $id: 'EventType',
  description: 'A type of the event catalog (GET /v1/webhooks/endpoints/event-types).',
});

/** Each subject type's id prefix and path, for the examples. */
const PREFIXES: Record<string, string> = { product: 'prd', order: 'ord', webhook_endpoint: 'whe' };
const PATHS: Record<string, string> = { product: 'products', order: 'orders', webhook_endpoint: 'webhooks/endpoints' };

const Subject = (type: string) =>
  Type.Object(
    {
      id: Type.String({ description: 'Id of the resource.', examples: [exampleId(PREFIXES[type] ?? 'prd')] }),
      type: Type.Literal(type),
      url: Type.String({
        description: 'Path of the resource: fetch it for its current state (404 once it is deleted).',
        examples: [`/v1/${PATHS[type] ?? 'products'}/${exampleId(PREFIXES[type] ?? 'prd')}`],
      }),
    },
    { description: 'The resource the event is about.' },
  );

/** One payload schema per catalog type, so each type's `type` and `subject.type` are constants. */
export const EVENT_VARIANTS: TObject[] = EVENT_CATALOG.map(({ type, subject, description }) =>
  Type.Object(
    {
      id: Type.String({ description: 'evt_...', examples: [exampleId('evt')] }),
      type: Type.Literal(type),
      created: Type.String({ format: 'date-time', description: 'Time of emission (ISO 8601, UTC, milliseconds).' }),
      ...(subject ? { subject: Subject(subject) } : {}),
    },
    { $id: eventSchemaName(type), title: type, description },
  ),
);

export const Event = Type.Union(
  EVENT_VARIANTS.map((variant) => Type.Ref(variant.$id!)),
  {
    $id: 'Event',
    description: 'An event, one of the catalog types. The body is byte-identical to the one POSTed to webhook endpoints.',
    discriminator: {
      propertyName: 'type',
      mapping: Object.fromEntries(EVENT_CATALOG.map(({ type }) => [type, `#/components/schemas/${eventSchemaName(type)}`])),
    },
  },
);

/** Shared schemas of events, for the app to register (their names are the document's component names). */
export const EVENT_SCHEMAS = [EventTypeName, ...EVENT_VARIANTS, Event];

export const EventList = ListOf(Type.Ref('Event'), 'Events of the workspace, newest first.');

export const EventListQuery = Type.Object(
  {
    ...PageQuery,
    type: Type.Optional(EventTypeFilter('Exact event type, from the catalog.')),
    subjectType: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Subject type, e.g. product.', examples: ['product'] })),
    subjectId: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Subject id; requires subjectType.', examples: [exampleId('prd')] })),
  },
  { additionalProperties: false },
);
