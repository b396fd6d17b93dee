import type { Queryable } from '../db/db.js';
import type { EventInput } from '../events/store.js';
import { newId } from '../lib/ids.js';
import type { Mutation } from '../outbox/outbox.js';
import { findProductsByIds } from '../products/store.js';
import { priceLineItems } from './pricing.js';
import type { LineItemView, OrderCreateInput } from './schemas.js';
import { insertOrder, orderSubject } from './store.js';

/** An order ready to write: the statement, its order.created event, and its line items for the answer. */
export interface OrderCreation {
  mutation: Mutation;
  event: EventInput;
  lineItems: LineItemView[];
}

/**
 * Reads the products of `input` in the workspace and prices the order from them (a 400 naming each
 * line item that cannot be ordered). Its writer commits the order with its event: the outbox's
 * `change` for the API, `changeIn` inside a transaction (the demo data).
 */
export async function prepareOrder(q: Queryable, workspaceId: string, input: OrderCreateInput, now: Date): Promise<OrderCreation> {
  const products = await findProductsByIds(q, workspaceId, input.lineItems.map((l) => l.productId));
  const priced = priceLineItems(input.lineItems, products);
  const id = newId('ord', now);
  const order = { id, workspaceId, ...priced, customerEmail: input.customerEmail ?? null, metadata: input.metadata ?? {} };
  return {
    mutation: insertOrder(order, now),
    event: { workspaceId, type: 'order.created', subject: orderSubject(id), at: now },
    lineItems: priced.lineItems,
  };
}
