import { Api } from './api.js';
import { CliError, UsageError } from './args.js';
import { CONNECTION_HELP, type Connection } from './connection.js';

type Subject = 'product' | 'order';

/** What `svc trigger TYPE` does: the subject it changes, and the changes that emit TYPE for it. */
interface Recipe {
  subject: Subject;
  /** Makes the subject and changes it; answers its id. */
  run(api: Api): Promise<string>;
}

const SOURCE = { source: 'svc trigger' };

async function newProduct(api: Api): Promise<string> {
  const body = { name: 'Triggered product', description: 'Made by svc trigger.', price: { amount: 1500, currency: 'EUR' }, metadata: SOURCE };
  return (await api.call('POST', '/v1/products', body)).id;
}

async function newOrder(api: Api): Promise<string> {
  const productId = await newProduct(api);
  return (await api.call('POST', '/v1/orders', { lineItems: [{ productId, quantity: 1 }], customerEmail: 'trigger@example.com', metadata: SOURCE })).id;
}

/** An order moved through `actions` (pay, fulfill, cancel, refund), in order. */
const orderThen =
  (...actions: string[]) =>
  async (api: Api): Promise<string> => {
    const id = await newOrder(api);
    for (const action of actions) await api.call('POST', `/v1/orders/${id}/${action}`);
    return id;
  };

export const RECIPES: Record<string, Recipe> = {
  'product.created': { subject: 'product', run: newProduct },
  'product.updated': {
    subject: 'product',
    run: async (api) => {
      const id = await newProduct(api);
      await api.call('PATCH', `/v1/products/${id}`, { name: 'Triggered product, renamed', price: { amount: 1800, currency: 'EUR' } });
      return id;
    },
  },
  'product.deleted': {
    subject: 'product',
    run: async (api) => {
      const id = await newProduct(api);
      await api.call('DELETE', `/v1/products/${id}`);
      return id;
    },
  },
  'order.created': { subject: 'order', run: newOrder },
  'order.updated': {
    subject: 'order',
    run: async (api) => {
      const id = await newOrder(api);
      await api.call('PATCH', `/v1/orders/${id}`, { metadata: { ...SOURCE, note: 'updated' } });
      return id;
    },
  },
  'order.paid': { subject: 'order', run: orderThen('pay') },
  'order.fulfilled': { subject: 'order', run: orderThen('pay', 'fulfill') },
  'order.canceled': { subject: 'order', run: orderThen('cancel') },
  'order.refunded': { subject: 'order', run: orderThen('pay', 'refund') },
};

export const TRIGGER_HELP = `svc trigger TYPE [--api-key KEY] [--base-url URL] [--workspace WSP] [--json]
  Makes a real change through the API of a running service that emits an event of TYPE, as
  stripe trigger does: it creates what the change needs first (a product with a price, an order of
  it), then makes the change, and prints each request and the id of the TYPE event. Every event on
  the way (product.created, order.created, ...) goes to the subscribed endpoints and to svc listen.

  TYPE: ${Object.keys(RECIPES).join(', ')}
  (webhook.ping is sent to one endpoint by POST /v1/webhooks/endpoints/{id}/send-test-event;
  webhook.endpoint.auto_disabled follows failing deliveries.)

${CONNECTION_HELP}
  --json            {type, eventId, subject, requests} instead of text

Example:
  svc serve --demo &   svc listen --forward-to http://localhost:4242/webhooks &   svc trigger order.paid`;

/** The event type asked for, or a UsageError listing the ones there are. */
export function triggerType(type: string | undefined): string {
  if (type && Object.hasOwn(RECIPES, type)) return type;
  const list = Object.keys(RECIPES).join(', ');
  if (!type) throw new UsageError(`give an event type: svc trigger TYPE, one of ${list}`);
  throw new UsageError(`svc trigger cannot make "${type}"; it makes one of ${list}`);
}

export interface Triggered {
  type: string;
  eventId: string;
  subject: { type: Subject; id: string };
  requests: Api['made'];
}

/** `svc trigger TYPE`: the changes, then the id of the TYPE event they emitted for their subject. */
export async function trigger(type: string, connection: Connection): Promise<Triggered> {
  const recipe = RECIPES[type];
  const api = new Api(connection);
  const id = await recipe.run(api);
  const query = new URLSearchParams({ type, subjectType: recipe.subject, subjectId: id, limit: '1' });
  const { data } = await api.call<{ data: { id: string }[] }>('GET', `/v1/events?${query}`);
  if (data.length === 0) throw new CliError(`the service made ${recipe.subject} ${id} but shows no ${type} event for it`);
  return { type, eventId: data[0].id, subject: { type: recipe.subject, id }, requests: api.made.slice(0, -1) };
}

/** The text a person reads: each request, then the event. */
export function triggerText(result: Triggered): string {
  const lines = result.requests.map((r) => `${r.method.padEnd(6)} ${r.path}  [${r.status}]${r.status === 201 && r.id ? `  ${r.id}` : ''}`);
  lines.push(`Triggered ${result.type}: ${result.eventId} (${result.subject.type} ${result.subject.id})`);
  return lines.join('\n') + '\n';
}
