/** Every event type the service emits: the catalog webhook subscriptions are checked against. */
export const EVENT_CATALOG = [
  { type: 'product.created', description: 'A product was created.' },
  { type: 'product.updated', description: 'A product was updated.' },
  { type: 'product.deleted', description: 'A product was deleted; fetching it now returns 404.' },
  { type: 'webhook.endpoint.auto_disabled', description: 'A webhook endpoint was disabled after 5 consecutive failed deliveries.' },
  { type: 'webhook.ping', description: 'A test event sent by send-test-event; it has no subject.' },
] as const;

export type EventType = (typeof EVENT_CATALOG)[number]['type'];

export const EVENT_TYPES: readonly string[] = EVENT_CATALOG.map((e) => e.type);
