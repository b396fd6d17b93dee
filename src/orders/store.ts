import type { Queryable } from '../db/db.js';
import { fetchPage, type Cursor, type Page } from '../db/keyset.js';
import { SetList } from '../db/set.js';
import { Where } from '../db/where.js';
import { shape, type Row } from '../http/shape.js';
import type { Mutation } from '../outbox/outbox.js';
import { Order, OrderLineItem, type LineItemView, type OrderUpdateInput, type OrderView } from './schemas.js';
import { ORDER_ACTIONS, type OrderActionName, type OrderStatus } from './states.js';

/** The Order schema read from its row by the shape's rule; its line items are rows of their own (http/shape.ts). */
export const orderShape = shape(Order, { lineItems: false });
export const lineItemShape = shape(OrderLineItem);

export const ORDER_COLUMNS = orderShape.columns;

export type OrderRow = Row & { id: string; status: OrderStatus; created_at: Date };

/** An order as the API shows it; `lineItems` when given (a single order always, a list with the expand). */
export function toView(row: OrderRow, lineItems?: LineItemView[]): OrderView {
  return orderShape.view(row, { lineItems });
}

/** The subject of an order's events. */
export function orderSubject(id: string) {
  return { type: 'order', id, url: `/v1/orders/${id}` };
}

export async function findOrder(q: Queryable, workspaceId: string, id: string): Promise<OrderRow | null> {
  const [row] = await q.query<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = $1 AND workspace_id = $2`, [id, workspaceId]);
  return row ?? null;
}

/** The line items of the given orders, in their order of creation, by order id. */
export async function findLineItems(q: Queryable, workspaceId: string, orderIds: string[]): Promise<Map<string, LineItemView[]>> {
  const byOrder = new Map<string, LineItemView[]>(orderIds.map((id) => [id, []]));
  if (orderIds.length === 0) return byOrder;
  const rows = await q.query<Row & { order_id: string }>(
    `SELECT order_id, ${lineItemShape.columns} FROM order_line_items
      WHERE workspace_id = $1 AND order_id = ANY($2::text[]) ORDER BY order_id, position`,
    [workspaceId, orderIds],
  );
  for (const row of rows) byOrder.get(row.order_id)?.push(lineItemShape.view(row));
  return byOrder;
}

export interface OrderFilters {
  status?: OrderStatus;
  createdGte?: Date;
  createdLte?: Date;
}

export async function listOrders(q: Queryable, workspaceId: string, filters: OrderFilters, cursor: Cursor | null, limit: number): Promise<Page<OrderRow>> {
  const where = new Where().add('workspace_id = $?', workspaceId);
  if (filters.status) where.add('status = $?', filters.status);
  if (filters.createdGte) where.add('created_at >= $?', filters.createdGte);
  if (filters.createdLte) where.add('created_at <= $?', filters.createdLte);
  return fetchPage(q, { select: `SELECT ${ORDER_COLUMNS} FROM orders`, where, cursor, limit });
}

/** A new order's fields, its line items priced (pricing.ts). */
export interface NewOrder {
  id: string;
  workspaceId: string;
  currency: string;
  amountTotal: number;
  lineItems: LineItemView[];
  customerEmail: string | null;
  metadata: Record<string, string>;
}

/**
 * The order and its line items as one statement (the line items a CTE ahead of it, see Mutation):
 * the outbox adds the order.created event and its deliveries to the same statement.
 */
export function insertOrder(order: NewOrder, now: Date): Mutation {
  const items = order.lineItems;
  return {
    before: `line_items AS (
       INSERT INTO order_line_items (order_id, workspace_id, position, product_id, name, unit_amount, quantity, amount)
       SELECT $1, $2, i.position, i.product_id, i.name, i.unit_amount, i.quantity, i.amount
         FROM unnest($8::text[], $9::text[], $10::bigint[], $11::int[], $12::bigint[])
              WITH ORDINALITY AS i (product_id, name, unit_amount, quantity, amount, position)
     )`,
    sql: `INSERT INTO orders (id, workspace_id, status, currency, amount_total, customer_email, metadata, created_at, updated_at)
          VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $7) RETURNING ${ORDER_COLUMNS}`,
    params: [
      order.id,
      order.workspaceId,
      order.currency,
      order.amountTotal,
      order.customerEmail,
      JSON.stringify(order.metadata),
      now,
      items.map((i) => i.productId),
      items.map((i) => i.name),
      items.map((i) => i.unitAmount),
      items.map((i) => i.quantity),
      items.map((i) => i.amount),
    ],
  };
}

/** Applies the given fields, in any status. */
export function updateOrder(workspaceId: string, id: string, input: OrderUpdateInput, now: Date): Mutation {
  const set = new SetList([id, workspaceId, now], 'updated_at = $3')
    .field('customer_email', input.customerEmail)
    .field('metadata', input.metadata === undefined ? undefined : JSON.stringify(input.metadata));
  return { sql: `UPDATE orders SET ${set.sql} WHERE id = $1 AND workspace_id = $2 RETURNING ${ORDER_COLUMNS}`, params: set.params };
}

/**
 * Moves the order to the action's status if its status now allows it, and returns no row otherwise.
 * The condition is part of the UPDATE, which locks the row: of two actions racing on one order, the
 * second waits for the first to commit, reads the status it left, and changes nothing if that status
 * no longer allows it. So exactly one of them succeeds and emits its event.
 */
export function transitionOrder(workspaceId: string, id: string, action: OrderActionName, now: Date): Mutation {
  const { from, to, column } = ORDER_ACTIONS[action];
  // Statuses and columns are constants of ORDER_ACTIONS, never input.
  const allowed = from.map((s) => `'${s}'`).join(', ');
  return {
    sql: `UPDATE orders SET status = '${to}', ${column} = $3, updated_at = $3
           WHERE id = $1 AND workspace_id = $2 AND status IN (${allowed}) RETURNING ${ORDER_COLUMNS}`,
    params: [id, workspaceId, now],
  };
}
