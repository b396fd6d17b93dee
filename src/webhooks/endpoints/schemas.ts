import { Type, type Static } from '@sinclair/typebox';
import { exampleId } from '../../http/examples.js';
import { EVENT_TYPES } from '../../engine/log/catalog.js';
import { ApiError, validation } from '../../http/errors.js';
import { ExpandParam } from '../../http/expand.js';
import { ListOf } from '../../http/list.js';
import { PageQuery } from '../../http/pagination.js';
import { StringMap } from '../../http/string-map.js';
import { describePattern } from '../../http/validation-messages.js';
import { subscriptionPatterns } from '../../engine/log/patterns.js';
import { HEADER_NAME_PATTERN, HEADER_VALUE_PATTERN, MAX_HEADERS, MAX_HEADER_NAME_LENGTH, MAX_HEADER_VALUE_LENGTH } from './headers.js';

export const MAX_URL_LENGTH = 2048;

/**
 * The shape checkUrl accepts, as a pattern the document shows and validation applies first: a
 * scheme, `://`, credentials (for a broker), a host, no spaces or control characters. Which schemes
 * (https://, amqp(s)://, nats:// and tls://, and http:// with SVC_ALLOW_PRIVATE_TARGETS) and which
 * hosts' addresses are allowed depends on the settings, and is checked after it (checkUrl, checkTarget).
 */
export const URL_PATTERN = describePattern(
  '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^\\s\\u0000-\\u001f\\u007f/\\\\?#@]+@)?[^\\s\\u0000-\\u001f\\u007f/\\\\?#@]+(?:[/?#][^\\s\\u0000-\\u001f\\u007f]*)?$',
  "must be an absolute URL of the form https://host/path (a broker's: amqp://user:password@host/vhost), without spaces or control characters",
);
const EXAMPLE_URL = 'https://hooks.example.com/svc';
const EXAMPLE_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw1zpKvKJHtbVk';
const EXAMPLE_PUBLIC_KEY = 'whpk_jMvqYLNb3hl3GmOWqNpEUGNsETqJ6pVk3Ib5/bmzNUs=';
const EXAMPLE_HEADERS = { authorization: 'Bearer 3f9c2d7e', 'x-team': 'payments' };

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

const endpointProperties = {
  id: Type.String({ description: 'whe_...', examples: [exampleId('whe')] }),
  url: Type.String({
    format: 'uri',
    description: 'The URL that receives deliveries (https://) or the broker they are published to (amqp://, amqps://, nats://, tls://); a password in it is shown as ***.',
    examples: [EXAMPLE_URL],
  }),
  description: Nullable(Type.String({ examples: ['Order fulfilment service'] })),
  subscribedEvents: Type.Array(Type.String({ examples: ['order.*'] }), { description: 'Exact event types or prefix patterns such as product.*.' }),
  active: Type.Boolean({ description: 'False while paused or auto-disabled: events then get disabled delivery rows and no request.' }),
  rateLimit: Nullable(Type.Integer({ description: 'Deliveries per second this endpoint accepts, across every worker; null: no limit.', examples: [50] })),
  headers: StringMap(Type.String(), {
    examples: [EXAMPLE_HEADERS],
    description:
      'Extra request headers sent with every delivery, names in lower case; {} when none. Values are shown to credentials that may change the endpoint (workspace:developer:write); others see "[redacted]".',
  }),
  ordering: Type.Union([Type.Literal('none'), Type.Literal('subject')], {
    description:
      'subject: a delivery waits while an older delivery of the same subject (product, order) to this endpoint is pending, so one subject\'s events arrive in order (head-of-line blocking); none: no such wait.',
  }),
  propagateTrace: Type.Boolean({
    description:
      "true: while the service's tracing is on, each request to this endpoint carries a W3C traceparent header, the context of its attempt's span, " +
      "so the receiver's own spans join the trace; false: none is sent.",
  }),
  disabledReason: Nullable(
    Type.Union([Type.Literal('manual'), Type.Literal('auto'), Type.Literal('gone')], {
      description: 'manual: paused with PATCH {active: false}; auto: disabled after 5 consecutive failed deliveries; gone: disabled at once when the receiver answered 410 Gone.',
    }),
  ),
  throttle: Nullable(
    Type.Object(
      {
        concurrency: Type.Integer({ minimum: 1, description: 'Attempts a worker lets this endpoint have in flight at once now.', examples: [2] }),
        since: Type.String({ format: 'date-time', description: 'When the endpoint was first slowed down in this spell.' }),
      },
      {
        description:
          'Set while the endpoint is slowed down: it answered 429, 502, 503 or 504, or timed out, and each such answer halved the attempts ' +
          'it gets at once, which grow back by one with every other answer; null once they are back where they were. ' +
          'Written by the workers at most once a second; with several workers, the latest write shows.',
      },
    ),
  ),
  alerts: Type.Boolean({
    description:
      'true (the default): people who can read webhooks are told when the endpoint fails for a while, when it is one failed delivery from being ' +
      'disabled and when it delivers again, and webhook.endpoint.failing and webhook.endpoint.recovered are emitted; false: none of it.',
  }),
  failing: Nullable(
    Type.Object(
      {
        since: Type.String({ format: 'date-time', description: 'Its first failed attempt after its last success.' }),
        responseStatus: Nullable(Type.Integer({ description: 'The HTTP status of the latest failed attempt when the alert was raised; null without an answer.', examples: [500] })),
        error: Nullable(Type.String({ description: 'Why that attempt failed.', examples: ['HTTP 500'] })),
        deliveriesWaiting: Type.Integer({ minimum: 0, description: 'Deliveries that were waiting for a retry when the alert was raised.', examples: [12] }),
      },
      {
        description:
          'Set while the endpoint is failing: every attempt has failed for SVC_ALERT_FAILING_AFTER (15 minutes) and at least ' +
          'SVC_ALERT_FAILING_DELIVERIES (3) deliveries fail; null once it delivers again, and for an endpoint with alerts off.',
      },
    ),
  ),
  signatureScheme: Type.Union([Type.Literal('v1'), Type.Literal('v1a')], {
    description: 'v1: HMAC-SHA256 with the endpoint\'s secret (whsec_...); v1a: ed25519, verified with publicKey (Standard Webhooks).',
  }),
  publicKey: Nullable(
    Type.String({
      description: 'v1a only: the public key (whpk_...) that verifies the current signatures; null for v1. After a rotation the previous key also signs for 24 hours.',
      examples: [EXAMPLE_PUBLIC_KEY],
    }),
  ),
  exchange: Nullable(Type.String({ description: 'amqp(s):// only: the exchange published to; null: amq.topic.', examples: ['amq.topic'] })),
  routingKey: Nullable(Type.String({ description: 'amqp(s):// only: the routing key; null: the event type (product.updated).', examples: ['shop.product.updated'] })),
  subject: Nullable(Type.String({ description: 'nats:// and tls:// only: the subject published to; null: events.<type> (events.product.updated).', examples: ['events.shop'] })),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
};

export const WebhookEndpoint = Type.Object(
  {
    ...endpointProperties,
    stats: Type.Optional(
      Type.Ref('WebhookEndpointStats', {
        description: 'In a list with expand=stats only: its attempts over the last 24 hours, as GET /webhooks/endpoints/{id}/stats?window=24h answers.',
      }),
    ),
  },
  { $id: 'WebhookEndpoint', description: 'A webhook endpoint. Its signing secret is shown only by create and rotate-secret.' },
);

export const CreatedWebhookEndpoint = Type.Composite([
  Type.Object(endpointProperties),
  Type.Object({
    secret: Type.Optional(
      Type.String({ description: 'v1 only: the signing secret (whsec_...), returned this once. A v1a endpoint keeps its private key; see publicKey.', examples: [EXAMPLE_SECRET] }),
    ),
  }),
]);

const fields = {
  url: Type.String({
    minLength: 1,
    maxLength: MAX_URL_LENGTH,
    pattern: URL_PATTERN,
    examples: [EXAMPLE_URL],
    description:
      'An https:// URL, or a broker: amqp:// or amqps:// (RabbitMQ, the vhost as path, user and password allowed), nats:// or tls:// ' +
      '(NATS JetStream, user:password or a token allowed); credentials are encrypted at rest and shown redacted. The host must be public: ' +
      'a host that is or resolves only to a loopback, private or link-local address is refused, as is http://, unless ' +
      'SVC_ALLOW_PRIVATE_TARGETS is set (for local development). A name that does not resolve yet is accepted; every attempt checks the address it connects to.',
  }),
  subscribedEvents: Type.Array(Type.String({ minLength: 1, maxLength: 100, examples: ['order.*'] }), {
    minItems: 1,
    maxItems: 50,
    description: 'Event types from GET /webhooks/endpoints/event-types, or prefix patterns such as product.*; duplicates are dropped.',
  }),
  description: Nullable(Type.String({ maxLength: 500, examples: ['Order fulfilment service'] })),
  rateLimit: Nullable(
    Type.Integer({
      minimum: 1,
      maximum: 100_000,
      examples: [50],
      description: 'Deliveries per second at most, enforced across every worker process; null (the default) sets no limit.',
    }),
  ),
  headers: Nullable(
    StringMap(Type.String({ maxLength: MAX_HEADER_VALUE_LENGTH, pattern: HEADER_VALUE_PATTERN }), {
      maxProperties: MAX_HEADERS,
      propertyNames: { maxLength: MAX_HEADER_NAME_LENGTH, pattern: HEADER_NAME_PATTERN },
      examples: [EXAMPLE_HEADERS],
      description:
        `Up to ${MAX_HEADERS} extra request headers sent with every delivery (e.g. a receiver's credential), encrypted at rest. Names are HTTP tokens, ` +
        'case-insensitive (kept in lower case); webhook-*, proxy-*, content-type, content-length, host, user-agent, connection, keep-alive, ' +
        `transfer-encoding, te, trailer, upgrade and expect are refused. Values: 1-${MAX_HEADER_VALUE_LENGTH} printable ASCII characters. ` +
        'Replaces the whole set; null or {} clears it.',
    }),
  ),
  ordering: Type.Union([Type.Literal('none'), Type.Literal('subject')], {
    description: 'none (the default), or subject: deliveries of one subject are sent one at a time, oldest first; a failing one holds the later ones back.',
  }),
  exchange: Nullable(
    Type.String({
      maxLength: 255,
      pattern: '^[A-Za-z0-9_.:-]*$',
      examples: ['amq.topic'],
      description: 'amqp:// and amqps:// only (400 otherwise): the exchange to publish to, which must exist; null (the default) is amq.topic, "" the default exchange.',
    }),
  ),
  routingKey: Nullable(
    Type.String({
      maxLength: 255,
      pattern: '^[\\x21-\\x7e]*$',
      examples: ['shop.product.updated'],
      description: 'amqp:// and amqps:// only (400 otherwise): the routing key of every message; null (the default) is the event type, so a queue binds product.*.',
    }),
  ),
  subject: Nullable(
    Type.String({
      maxLength: 255,
      pattern: '^[^\\s*>.]+(?:\\.[^\\s*>.]+)*$',
      examples: ['events.shop'],
      description: 'nats:// and tls:// only (400 otherwise): the subject to publish to, no wildcards; null (the default) is events.<type>. A JetStream stream must capture it.',
    }),
  ),
  propagateTrace: Type.Boolean({
    description: "false (the default), or true: each request carries a W3C traceparent header of its attempt's span while the service's tracing is on.",
  }),  alerts: Type.Boolean({
    description: 'false: no failure alerts for this endpoint (no notices, no webhook.endpoint.failing or recovered events); true (the default) turns them back on.',
  }),
};

export const EndpointCreate = Type.Object(
  {
    url: fields.url,
    subscribedEvents: fields.subscribedEvents,
    description: Type.Optional(fields.description),
    rateLimit: Type.Optional(fields.rateLimit),
    headers: Type.Optional(fields.headers),
    ordering: Type.Optional(fields.ordering),
    exchange: Type.Optional(fields.exchange),
    routingKey: Type.Optional(fields.routingKey),
    subject: Type.Optional(fields.subject),
    signatureScheme: Type.Optional(
      Type.Union([Type.Literal('v1'), Type.Literal('v1a')], {
        description: 'v1 (the default): HMAC-SHA256 with a shared secret; v1a: ed25519, the service keeps the private key and shows the public key. Set at creation only.',
      }),
    ),
    propagateTrace: Type.Optional(fields.propagateTrace),
  },
  { additionalProperties: false },
);

export const EndpointUpdate = Type.Partial(
  Type.Object({
    ...fields,
    active: Type.Boolean({ description: 'false pauses (pending deliveries become disabled); true re-enables and resets the failure count.' }),
  }),
  {
    additionalProperties: false,
    minProperties: 1,
    description:
      'Fields to change; null clears description, rateLimit, headers, exchange, routingKey and subject. A url of another destination clears the fields of the old one.',
  },
);

export const EndpointList = ListOf(Type.Ref('WebhookEndpoint'), 'Webhook endpoints of the workspace, newest first.');
/** What a list of endpoints can expand: each one's health, so a list page needs one request, not one per endpoint. */
export const ENDPOINT_EXPANDS = ['stats'] as const;
export const EndpointListQuery = Type.Object({ ...PageQuery, expand: ExpandParam(ENDPOINT_EXPANDS) }, { additionalProperties: false });

export const EventTypeList = ListOf(
  Type.Object({ type: Type.Ref('EventType'), description: Type.String({ examples: ['An order was paid (pending to paid).'] }) }),
  'Every event type an endpoint can subscribe to (a small set: both page URLs null).',
);

export const RotatedSecret = Type.Object({
  secret: Type.Optional(Type.String({ description: 'v1 only: the new signing secret (whsec_...), returned this once.', examples: [EXAMPLE_SECRET] })),
  publicKey: Type.Optional(Type.String({ description: 'v1a only: the new public key (whpk_...); the endpoint shows it from now on.', examples: [EXAMPLE_PUBLIC_KEY] })),
  previousSecretExpiresAt: Type.String({ format: 'date-time', description: 'Until then deliveries are signed with both secrets (both keys, for v1a).' }),
});

export const TestEventSent = Type.Object({
  deliveryId: Type.String({ description: 'whd_... of the queued delivery.', examples: [exampleId('whd')] }),
  eventId: Type.String({ description: 'Synthetic evt_... id of the webhook.ping event (not in the event log).', examples: [exampleId('evt')] }),
});

export const EndpointDeleted = Type.Object({ id: Type.String({ examples: [exampleId('whe')] }), deleted: Type.Literal(true) });

export type EndpointCreateInput = Static<typeof EndpointCreate>;
export type EndpointUpdateInput = Static<typeof EndpointUpdate>;

/** A subscription is valid when fan-out can match it: a catalog type, or a prefix pattern of one. */
export function isValidSubscription(entry: string): boolean {
  return EVENT_TYPES.some((type) => subscriptionPatterns(type).includes(entry));
}

/** Refuses entries outside the catalog, naming the catalog; returns the list without duplicates. */
export function checkSubscriptions(entries: string[]): string[] {
  const unknown = entries.filter((e) => !isValidSubscription(e));
  if (unknown.length > 0) {
    throw validation(
      `Unknown event type ${unknown.map((u) => `"${u}"`).join(', ')} in subscribedEvents. ` +
        `Use one of: ${EVENT_TYPES.join(', ')}, or a prefix pattern such as product.*.`,
      unknown.map((u) => ({ path: `body.subscribedEvents`, message: `"${u}" is not in the event-type catalog` })),
    );
  }
  return [...new Set(entries)];
}

/** 409 for a ping or replay to an endpoint that cannot send; the message says how to fix it. */
export function endpointInactive(endpoint: { disabled_reason: 'manual' | 'auto' | 'gone' | null; deleted_at: Date | null }): ApiError {
  if (endpoint.deleted_at) return new ApiError('ENDPOINT_INACTIVE', 'The webhook endpoint was deleted.');
  const why =
    endpoint.disabled_reason === 'auto'
      ? 'was disabled after 5 consecutive failed deliveries'
      : endpoint.disabled_reason === 'gone'
        ? 'was disabled when its receiver answered 410 Gone'
        : 'is paused';
  return new ApiError('ENDPOINT_INACTIVE', `The webhook endpoint ${why}; re-enable it with PATCH {"active": true} first.`);
}
