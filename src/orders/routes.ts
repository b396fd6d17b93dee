import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/db.js';
import { createdRange } from '../http/created-range.js';
import type { ListContext } from '../http/list.js';
import { WorkspaceHeader, type Mount } from '../http/mount.js';
import { resource } from '../http/resource.js';
import type { Clock } from '../lib/clock.js';
import type { Outbox } from '../engine/outbox/outbox.js';
import { ORDER_EXPANDS, OrderCreate, OrderList, OrderListQuery, OrderUpdate } from './schemas.js';
import { prepareOrder } from './service.js';
import { ORDER_ACTIONS, invalidState, type OrderActionName } from './states.js';
import { findLineItems, findOrder, listOrders, toView, transitionOrder, updateOrder, type OrderRow } from './store.js';

const read = { scope: 'workspace', permission: 'workspace:orders:read' } as const;
const write = { scope: 'workspace', permission: 'workspace:orders:write' } as const;

/** What the order routes use of the service. */
export type OrderDeps = ListContext & { db: Db; clock: Clock; outbox: Pick<Outbox, 'write'> };

export function orderRoutes(app: FastifyInstance, deps: OrderDeps, mount: Mount): void {
  const { db, clock, outbox } = deps;
  const orders = resource(app, { path: '/orders', tag: 'Orders', mount, headers: WorkspaceHeader, item: { name: 'orderId', prefix: 'ord', noun: 'order' }, read, write, pages: deps });
  const Order = Type.Ref('Order');

  /** A single order as every operation answers it: with its line items (immutable, so read after the change). */
  const withLineItems = async (workspaceId: string, row: OrderRow) => toView(row, (await findLineItems(db, workspaceId, [row.id])).get(row.id));

  orders.create({
    operationId: 'createOrder',
    summary: 'Create an order from products of the workspace, snapshotting their names and prices',
    description:
      'Emits `order.created`. Each product must exist in the workspace, be active and have a price, and all prices must share one currency; ' +
      'otherwise 400 naming the line item. The order starts `pending`.',
    body: OrderCreate,
    response: Order,
    handle: async ({ owner, body }) => {
      const creation = await prepareOrder(db, owner, body, clock.now());
      const [row] = await outbox.write<OrderRow>(creation.write);
      return toView(row, creation.lineItems);
    },
  });

  orders.list({
    operationId: 'listOrders',
    summary: 'List orders, newest first, with filters',
    query: OrderListQuery,
    response: OrderList,
    list: 'orders',
    // The filters as given are bound into the cursor: changing one beside a page token is a 400.
    filters: ['status', 'createdGte', 'createdLte'],
    expand: ORDER_EXPANDS,
    where: (query) => ({ status: query.status, ...createdRange(query) }),
    rows: ({ owner, where, cursor, limit }) => listOrders(db, owner, where, cursor, limit),
    data: async (rows, { owner, expand }) => {
      const lineItems = expand.has('lineItems') ? await findLineItems(db, owner, rows.map((r) => r.id)) : null;
      return rows.map((row) => toView(row, lineItems?.get(row.id)));
    },
  });

  orders.retrieve({
    operationId: 'getOrder',
    summary: 'Retrieve an order with its line items',
    response: Order,
    handle: async ({ owner, id }) => {
      const row = await findOrder(db, owner, id);
      return row && withLineItems(owner, row);
    },
  });

  orders.update({
    operationId: 'updateOrder',
    summary: "Update an order's metadata or customer e-mail (event order.updated)",
    body: OrderUpdate,
    response: Order,
    handle: async ({ owner, id, body }) => {
      const [row] = await outbox.write<OrderRow>(updateOrder(owner, id, body, clock.now()));
      return row && withLineItems(owner, row);
    },
  });

  for (const name of Object.keys(ORDER_ACTIONS) as OrderActionName[]) {
    const action = ORDER_ACTIONS[name];
    orders.action({
      path: `/${name}`,
      errors: ['INVALID_STATE'],
      operationId: `${name}Order`,
      summary: `${action.summary} (event ${action.event}; 409 INVALID_STATE from any other status)`,
      description: `Emits \`${action.event}\`. From any other status: 409 \`INVALID_STATE\`, whose message names the current status and the actions allowed from it.`,
      response: Order,
      handle: async ({ owner, id }) => {
        const [row] = await outbox.write<OrderRow>(transitionOrder(owner, id, name, clock.now()));
        if (row) return withLineItems(owner, row);
        // Nothing changed: either there is no such order, or its status does not allow the action.
        const current = await findOrder(db, owner, id);
        if (!current) return null;
        throw invalidState(id, current.status, name);
      },
    });
  }
}
