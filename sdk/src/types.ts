import type { components, paths } from './schema.js';

type Schemas = components['schemas'];

/** Every event the service emits, as a union on `type`: what webhook endpoints receive and GET /v1/events serves. */
export type Event = Schemas['Event'];
/** The catalog's event types. */
export type EventType = Schemas['EventType'];
/** The payload of one event type, e.g. `EventOf<'product.deleted'>`. */
export type EventOf<T extends EventType> = Extract<Event, { type: T }>;
export type Product = Schemas['Product'];
/** An order; `lineItems` is always there on a single order, and on list items only with expand=lineItems. */
export type Order = Schemas['Order'];
export type OrderLineItem = Schemas['OrderLineItem'];
/** A webhook endpoint; `stats` only on list items with expand=stats. */
export type WebhookEndpoint = Schemas['WebhookEndpoint'];
/** An endpoint's attempts over a window: GET .../stats, and each list item's `stats` with expand=stats (24 hours). */
export type WebhookEndpointStats = Schemas['WebhookEndpointStats'];
export type WebhookDelivery = Schemas['WebhookDelivery'];
/** A browser registered for Web Push (POST /v1/me/push-devices); the message it gets is described in docs/notifications.md. */
export type PushDevice = Schemas['PushDevice'];
/** The error envelope's body: `{code, message, requestId, details?}`. */
export type ApiErrorBody = Schemas['ErrorResponse']['error'];
export type ErrorCode = ApiErrorBody['code'];

/** The resource behind each `subject.type`, as its retrieve operation answers it. */
export interface SubjectTypes {
  product: Product;
  order: Order;
  webhook_endpoint: WebhookEndpoint;
}
/** What `fetchSubject` returns for an event: its subject's current state. */
export type SubjectOf<E extends Event> = E extends { subject: { type: infer T } } ? (T extends keyof SubjectTypes ? SubjectTypes[T] : unknown) : never;

export type Method = 'get' | 'post' | 'patch' | 'delete';
/** The paths that answer `method`, e.g. `PathsOf<'post'>`. */
export type PathsOf<M extends Method> = { [P in keyof paths]: paths[P] extends { [K in M]: object } ? P : never }[keyof paths];
