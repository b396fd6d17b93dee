import { Type } from '@sinclair/typebox';

/**
 * Every event type the service emits: the catalog webhook subscriptions are checked against, and the
 * source of the event schemas and the `webhooks` section of the OpenAPI document. `subject` is the
 * `subject.type` of the type's events (null: the event has no subject).
 */
export const EVENT_CATALOG = [
  { type: 'product.created', subject: 'product', description: 'A product was created.' },
  { type: 'product.updated', subject: 'product', description: 'A product was updated.' },
  { type: 'product.deleted', subject: 'product', description: 'A product was deleted; fetching it now returns 404.' },
  { type: 'order.created', subject: 'order', description: 'An order was created (status pending).' },
  { type: 'order.updated', subject: 'order', description: "An order's metadata or customer e-mail changed." },
  { type: 'order.paid', subject: 'order', description: 'An order was paid (pending to paid).' },
  { type: 'order.fulfilled', subject: 'order', description: 'An order was fulfilled (paid to fulfilled).' },
  { type: 'order.canceled', subject: 'order', description: 'An order was canceled (pending to canceled).' },
  { type: 'order.refunded', subject: 'order', description: 'An order was refunded (paid or fulfilled to refunded).' },
  {
    type: 'webhook.endpoint.auto_disabled',
    subject: 'webhook_endpoint',
    description: 'A webhook endpoint was disabled: after 5 consecutive failed deliveries, or at once when its receiver answered 410 Gone.',
  },
  {
    type: 'webhook.endpoint.failing',
    subject: 'webhook_endpoint',
    description:
      'Every attempt to a webhook endpoint has failed for a while (15 minutes and 3 deliveries by default); its `failing` field says since when and what fails. Once per incident.',
  },
  {
    type: 'webhook.endpoint.recovered',
    subject: 'webhook_endpoint',
    description: 'A webhook endpoint that was failing (webhook.endpoint.failing) delivered again. Once per incident.',
  },
  { type: 'webhook.ping', subject: null, description: 'A test event sent by send-test-event; it has no subject.' },
] as const satisfies readonly { type: string; subject: string | null; description: string }[];

export type EventType = (typeof EVENT_CATALOG)[number]['type'];

export const EVENT_TYPES: readonly EventType[] = EVENT_CATALOG.map((e) => e.type);

/**
 * A filter on one event type of the catalog (this catalog, its single source): a type outside it is
 * refused with the list of types, rather than answered with an empty list that hides a typo.
 */
export const EventTypeFilter = (description: string) => Type.Unsafe<EventType>({ type: 'string', enum: [...EVENT_TYPES], description });
