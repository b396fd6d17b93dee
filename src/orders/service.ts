import type { Queryable } from '../db/db.js';
import { newId } from '../lib/ids.js';
import type { Write } from '../engine/outbox/outbox.js';
import { findOrderedProducts } from './products.js';
import { priceLineItems } from './pricing.js';
import type { LineItemView, OrderCreateInput } from './schemas.js';
import { insertOrder } from './store.js';

/** An order ready to write (with its order.created event), and its line items for the answer. */
export interface OrderCreation {
  write: Write;
  lineItems: LineItemView[];
}

/**
 * Reads the products of `input` in the workspace and prices the order from them (a 400 naming each
 * line item that cannot be ordered). Its writer commits the order with its event: the outbox's
 * `write` for the API, `writeIn` inside a transaction (the demo data).
 */
export async function prepareOrder(q: Queryable, workspaceId: string, input: OrderCreateInput, now: Date): Promise<OrderCreation> {
  const products = await findOrderedProducts(q, workspaceId, input.lineItems.map((l) => l.productId));
  const priced = priceLineItems(input.lineItems, products);
  const id = newId('ord', now);
  const order = { id, workspaceId, ...priced, customerEmail: input.customerEmail ?? null, metadata: input.metadata ?? {} };
  return { write: insertOrder(order, now), lineItems: priced.lineItems };
}
