import { Type, type Static } from '@sinclair/typebox';
import { EXAMPLE_WORKSPACE_ID, exampleId } from '../../http/examples.js';
import { EventTypeFilter } from '../../engine/log/catalog.js';
import { CreatedRange } from '../../http/created-range.js';
import { ListOf } from '../../http/list.js';
import { PageQuery } from '../../http/pagination.js';
import { StringMap } from '../../http/string-map.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

/** The headers of a delivery request as the log keeps them: the signature, never a secret. */
const REQUEST_HEADERS = {
  'content-type': 'application/json',
  'webhook-id': exampleId('whd'),
  'webhook-timestamp': '1795615387',
  'webhook-signature': 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
};

const Status = Type.Union([Type.Literal('pending'), Type.Literal('success'), Type.Literal('failed'), Type.Literal('disabled')], {
  description: 'pending: queued or retrying; success; failed: gave up after every attempt; disabled: never sent, the endpoint was inactive.',
});

const listFields = {
  id: Type.String({ description: 'whd_...; also the webhook-id header, reused by retries.', examples: [exampleId('whd')] }),
  endpointId: Type.String({ description: 'whe_...', examples: [exampleId('whe')] }),
  eventId: Type.String({ description: 'The originating event, or a synthetic evt_ id for webhook.ping and replays, which is not in the event log (a replay\'s event is its sourceEventId).', examples: [exampleId('evt')] }),
  eventType: Type.String({ examples: ['order.paid'] }),
  workspaceId: Type.String({ examples: [EXAMPLE_WORKSPACE_ID] }),
  status: Status,
  attempt: Type.Integer({ description: 'HTTP attempts made so far.', examples: [1] }),
  createdAt: Type.String({ format: 'date-time', description: 'When the row was enqueued.' }),
  deliveredAt: Nullable(Type.String({ format: 'date-time', description: 'Time of the successful attempt.' })),
  error: Nullable(Type.String({ description: 'Short error of the last failed attempt.', examples: ['HTTP 503'] })),
  responseStatus: Nullable(Type.Integer({ description: 'HTTP status of the last attempt.', examples: [200] })),
  responseTimeMs: Nullable(Type.Integer({ description: 'Round trip of the last attempt in milliseconds.', examples: [142] })),
  replayOf: Nullable(Type.String({ description: 'For a replay, the id of the delivery it copies.', examples: [exampleId('whd')] })),
};

export const WebhookDelivery = Type.Object(listFields, { $id: 'WebhookDelivery', description: 'One delivery of one event to one endpoint.' });

const HeaderMap = (description: string, example: Record<string, string>) => Type.Union([StringMap(Type.String(), { examples: [example] }), Type.Null()], { description });

export const WebhookDeliveryDetail = Type.Object({
  delivery: Type.Object({
    ...listFields,
    nextAttemptAt: Nullable(Type.String({ format: 'date-time', description: 'When the next attempt is due; null once finished.' })),
    sourceEventId: Nullable(
      Type.String({
        description: "The event of the log whose body this delivery sends: eventId for an event's delivery; for a replay (whose eventId is synthetic) the event of the delivery it copies; null for webhook.ping and its replays.",
        examples: [exampleId('evt')],
      }),
    ),
    requestBody: Type.Unknown({ description: 'The JSON body sent (or to be sent).' }),
    requestHeaders: HeaderMap('Headers of the last attempt, without secrets; null before the first attempt.', REQUEST_HEADERS),
    responseBody: Nullable(Type.String({ description: 'Body of the last response, truncated; null without a response.', examples: ['{"received":true}'] })),
    responseHeaders: HeaderMap('Headers of the last response; null without a response.', { 'content-type': 'application/json' }),
    subject: Nullable(
      Type.Object({ id: Type.String({ examples: [exampleId('ord')] }), type: Type.String({ examples: ['order'] }) }, { description: 'The resource the event is about; null for webhook.ping.' }),
    ),
  }),
});

export const DeliveryList = ListOf(Type.Ref('WebhookDelivery'), 'Deliveries of the workspace, newest first.');

export const DeliveryListQuery = Type.Object(
  {
    ...PageQuery,
    endpointId: Type.Optional(Type.String({ pattern: '^whe_[0-9a-z]{26}$', description: 'Only deliveries to this endpoint (whe_...).', examples: [exampleId('whe')] })),
    eventId: Type.Optional(
      Type.String({ pattern: '^evt_[0-9a-z]{26}$', description: 'Only deliveries of this event (evt_...), its replays (and theirs) included.', examples: [exampleId('evt')] }),
    ),
    status: Type.Optional(Status),
    eventType: Type.Optional(EventTypeFilter('Exact event type, from the catalog.')),
    ...CreatedRange,
  },
  { additionalProperties: false },
);

export const Replayed = Type.Object({
  delivery: Type.Object({ id: Type.String({ description: 'whd_... of the new delivery.', examples: [exampleId('whd')] }), endpointId: Type.String({ examples: [exampleId('whe')] }) }),
});

export type DeliveryListQueryInput = Static<typeof DeliveryListQuery>;
