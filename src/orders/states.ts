import type { EventType } from '../engine/log/catalog.js';
import { ApiError } from '../http/errors.js';

/**
 * An order's life (docs/orders.md#status): created pending; paid, then fulfilled; canceled while pending;
 * refunded once paid or fulfilled. Canceled and refunded are final. docs/orders.md draws it.
 */
export const ORDER_STATUSES = ['pending', 'paid', 'fulfilled', 'canceled', 'refunded'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export interface OrderAction {
  /** Statuses the action is allowed from. */
  from: readonly OrderStatus[];
  to: OrderStatus;
  /** The column recording when the order reached `to`. */
  column: 'paid_at' | 'fulfilled_at' | 'canceled_at' | 'refunded_at';
  event: EventType;
  summary: string;
}

export const ORDER_ACTIONS = {
  pay: { from: ['pending'], to: 'paid', column: 'paid_at', event: 'order.paid', summary: 'Mark a pending order paid' },
  fulfill: { from: ['paid'], to: 'fulfilled', column: 'fulfilled_at', event: 'order.fulfilled', summary: 'Mark a paid order fulfilled' },
  cancel: { from: ['pending'], to: 'canceled', column: 'canceled_at', event: 'order.canceled', summary: 'Cancel a pending order' },
  refund: { from: ['paid', 'fulfilled'], to: 'refunded', column: 'refunded_at', event: 'order.refunded', summary: 'Refund a paid or fulfilled order' },
} as const satisfies Record<string, OrderAction>;

export type OrderActionName = keyof typeof ORDER_ACTIONS;

/** The actions allowed from `status`, in the order of ORDER_ACTIONS. */
export function allowedActions(status: OrderStatus): OrderActionName[] {
  return (Object.keys(ORDER_ACTIONS) as OrderActionName[]).filter((name) => (ORDER_ACTIONS[name].from as readonly OrderStatus[]).includes(status));
}

/** 409 for an action the order's status does not allow; the message names the status and what is allowed. */
export function invalidState(orderId: string, status: OrderStatus, action: OrderActionName): ApiError {
  const allowed = allowedActions(status);
  const then = allowed.length ? `the actions allowed from ${status} are: ${allowed.join(', ')}` : `no action is allowed from ${status}`;
  return new ApiError('INVALID_STATE', `Cannot ${action} order ${orderId}: its status is ${status}; ${then}.`);
}
