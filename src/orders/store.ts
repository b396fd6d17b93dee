import type { Queryable } from '../db/db.js';
import { fetchPage, type Cursor, type Page } from '../db/keyset.js';
import { assignments } from '../db/named.js';
import { Where } from '../db/where.js';
import { shape, type Row } from '../http/shape.js';
import type { Write } from '../engine/outbox/outbox.js';
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
 * The order and its line items as one statement (the line items a CTE ahead of it), with its
 * order.created event: the outbox adds the event and its deliveries to the same statement.
 */
export function insertOrder(order: NewOrder, now: Date): Write {
  const items = order.lineItems;
  return {
    change: {
      before: `line_items AS (
         INSERT INTO order_line_items (order_id, workspace_id, position, product_id, name, unit_amount, quantity, amount)
         SELECT :id, :workspace_id, i.position, i.product_id, i.name, i.unit_amount, i.quantity, i.amount
           FROM unnest(:product_ids::text[], :names::text[], :unit_amounts::bigint[], :quantities::int[], :amounts::bigint[])
                WITH ORDINALITY AS i (product_id, name, unit_amount, quantity, amount, position)
       )`,
      sql: `INSERT INTO orders (id, workspace_id, status, currency, amount_total, customer_email, metadata, created_at, updated_at)
            VALUES (:id, :workspace_id, 'pending', :currency, :amount_total, :customer_email, :metadata, :now, :now) RETURNING ${ORDER_COLUMNS}`,
      values: {
        id: order.id,
        workspace_id: order.workspaceId,
        currency: order.currency,
        amount_total: order.amountTotal,
        customer_email: order.customerEmail,
        metadata: JSON.stringify(order.metadata),
        now,
        product_ids: items.map((i) => i.productId),
        names: items.map((i) => i.name),
        unit_amounts: items.map((i) => i.unitAmount),
        quantities: items.map((i) => i.quantity),
        amounts: items.map((i) => i.amount),
      },
    },
    events: [{ event: { workspaceId: order.workspaceId, type: 'order.created', subject: orderSubject(order.id), at: now } }],
  };
}

/** Applies the given fields, in any status; with its order.updated event. */
export function updateOrder(workspaceId: string, id: string, input: OrderUpdateInput, now: Date): Write {
  const set = assignments({ customer_email: input.customerEmail, metadata: input.metadata === undefined ? undefined : JSON.stringify(input.metadata) });
  return {
    change: {
      sql: `UPDATE orders SET updated_at = :now${set.sql ? `, ${set.sql}` : ''} WHERE id = :id AND workspace_id = :workspace_id RETURNING ${ORDER_COLUMNS}`,
      values: { ...set.values, id, workspace_id: workspaceId, now },
    },
    events: [{ event: { workspaceId, type: 'order.updated', subject: orderSubject(id), at: now } }],
  };
}

/**
 * Moves the order to the action's status if its status now allows it, and returns no row otherwise
 * (then no event is written either). The condition is part of the UPDATE, which locks the row: of
 * two actions racing on one order, the second waits for the first to commit, reads the status it
 * left, and changes nothing if that status no longer allows it. So exactly one of them succeeds and
 * emits its event.
 */
export function transitionOrder(workspaceId: string, id: string, action: OrderActionName, now: Date): Write {
  const { from, to, column, event } = ORDER_ACTIONS[action];
  // Statuses and columns are constants of ORDER_ACTIONS, never input.
  const allowed = from.map((s) => `'${s}'`).join(', ');
  return {
    change: {
      sql: `UPDATE orders SET status = '${to}', ${column} = :now, updated_at = :now
             WHERE id = :id AND workspace_id = :workspace_id AND status IN (${allowed}) RETURNING ${ORDER_COLUMNS}`,
      values: { id, workspace_id: workspaceId, now },
    },
    events: [{ event: { workspaceId, type: event, subject: orderSubject(id), at: now } }],
  };
}
