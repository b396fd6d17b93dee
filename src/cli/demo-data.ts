import type { Queryable } from '../db/db.js';
import type { SecretBox } from '../lib/secretbox.js';
import { prepareOrder } from '../orders/service.js';
import { writeIn } from '../engine/outbox/outbox.js';
import { createProducts, creation } from '../products/create-batch.js';
import type { ProductCreateInput } from '../products/schemas.js';
import { createEndpoint, updateEndpoint } from '../webhooks/endpoints/store.js';

/** What `svc demo` and `svc serve --demo` put into the first workspace, so the first request shows something. */
export interface DemoSample {
  workspaceId: string;
  products: { id: string; name: string }[];
  order: { id: string; amountTotal: number; currency: string };
  webhookEndpoint: { id: string; url: string; secret: string; active: boolean };
}

const DEMO_PRODUCTS: ProductCreateInput[] = [
  { name: 'Espresso beans, 1 kg', description: 'Medium roast.', price: { amount: 2400, currency: 'EUR' }, metadata: { sku: 'BEANS-1KG' } },
  { name: 'Pour-over kettle', price: { amount: 5900, currency: 'EUR' }, metadata: { sku: 'KETTLE-01' } },
  { name: 'Gift card', description: 'Any amount, priced at checkout.', price: null, active: false },
];

/** A receiver that does not exist: the endpoint is paused, so nothing is ever sent to it. */
export const DEMO_ENDPOINT_URL = 'https://receiver.example.com/webhooks';

/**
 * Seeds `workspaceId` inside the caller's transaction: a paused webhook endpoint, then a few
 * products through the same statement the API uses, and an order of two of them, so their
 * `product.created` and `order.created` events are in the log and each has a `disabled` delivery to
 * the paused endpoint (point it at a real receiver, re-enable it, and replay them).
 */
export async function seedDemoData(q: Queryable, box: SecretBox, workspaceId: string, now: Date): Promise<DemoSample> {
  const { row, secret } = await createEndpoint(
    q,
    box,
    { workspaceId, url: DEMO_ENDPOINT_URL, subscribedEvents: ['product.*', 'order.*'], description: "Sample endpoint for this workspace's product and order events: point it at your receiver." },
    now,
  );
  await updateEndpoint(q, workspaceId, row.id, { active: false }, now);
  // One millisecond apart, so the list shows them in the order written here, newest first.
  const creations = DEMO_PRODUCTS.map((input, i) => creation(workspaceId, input, new Date(now.getTime() + i + 1)));
  await writeIn(q, createProducts(creations));
  const orderInput = {
    lineItems: [
      { productId: creations[0].values.id, quantity: 2 },
      { productId: creations[1].values.id, quantity: 1 },
    ],
    customerEmail: 'ada@example.com',
    metadata: { channel: 'demo' },
  };
  const order = await prepareOrder(q, workspaceId, orderInput, new Date(now.getTime() + creations.length + 1));
  const [placed] = await writeIn<{ id: string; amount_total: string | number; currency: string }>(q, order.write);
  return {
    workspaceId,
    products: creations.map((c) => ({ id: c.values.id, name: c.values.name })),
    order: { id: placed.id, amountTotal: Number(placed.amount_total), currency: placed.currency },
    webhookEndpoint: { id: row.id, url: row.url, secret, active: false },
  };
}
