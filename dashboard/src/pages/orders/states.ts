import type { Order } from '@svc/sdk';

export type OrderStatus = Order['status'];
export type OrderActionName = 'pay' | 'fulfill' | 'cancel' | 'refund';

export const ORDER_STATUSES: OrderStatus[] = ['pending', 'paid', 'fulfilled', 'canceled', 'refunded'];

/**
 * The order state machine as docs/orders.md draws it (the service's src/orders/states.ts): which
 * actions each status allows. Only these are offered; the API refuses the others regardless (409),
 * and a status changed meanwhile by someone else shows as that 409's message.
 */
export const ORDER_ACTIONS: Record<OrderActionName, { from: OrderStatus[]; label: string; confirm?: string }> = {
  pay: { from: ['pending'], label: 'Mark paid' },
  fulfill: { from: ['paid'], label: 'Mark fulfilled' },
  cancel: { from: ['pending'], label: 'Cancel order', confirm: 'The order becomes canceled, a final status: it cannot be paid afterwards.' },
  refund: { from: ['paid', 'fulfilled'], label: 'Refund', confirm: 'The order becomes refunded, a final status. Return the money through your payment provider too.' },
};

export const allowedActions = (status: OrderStatus): OrderActionName[] =>
  (Object.keys(ORDER_ACTIONS) as OrderActionName[]).filter((name) => ORDER_ACTIONS[name].from.includes(status));

/** The status an order.* event moved the order to (order.updated changes fields, not the status). */
export const STATUS_OF_EVENT: Record<string, OrderStatus | undefined> = {
  'order.created': 'pending',
  'order.paid': 'paid',
  'order.fulfilled': 'fulfilled',
  'order.canceled': 'canceled',
  'order.refunded': 'refunded',
};
