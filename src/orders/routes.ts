import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { createdRange } from '../http/created-range.js';
import { notFound } from '../http/errors.js';
import { parseExpand } from '../http/expand.js';
import { pageUrls, requestCursor } from '../http/list.js';
import { IdParam, WorkspaceHeader, type Mount } from '../http/mount.js';
import { DEFAULT_LIMIT } from '../http/pagination.js';
import { isId } from '../lib/ids.js';
import { ORDER_EXPANDS, OrderCreate, OrderList, OrderListQuery, OrderUpdate, type OrderListQueryInput } from './schemas.js';
import { prepareOrder } from './service.js';
import { ORDER_ACTIONS, invalidState, type OrderActionName } from './states.js';
import { findLineItems, findOrder, listOrders, toView, transitionOrder, updateOrder, type OrderRow } from './store.js';

const read = { scope: 'workspace', permission: 'workspace:orders:read' } as const;
const write = { scope: 'workspace', permission: 'workspace:orders:write' } as const;
type OrderParams = { Params: { orderId: string } };

/** An id of the wrong shape can never exist: it is a 404 like an unknown one, before any query. */
function orderIdOf(params: { orderId: string }): string {
  if (!isId('ord', params.orderId)) throw notFound('order');
  return params.orderId;
}

export function orderRoutes(app: FastifyInstance, ctx: AppContext, mount: Mount): void {
  const orderParams = mount.params({ orderId: IdParam('ord', 'Order id (ord_...).') });
  const common = { tags: ['Orders'], headers: WorkspaceHeader };
  const OrderRef = Type.Ref('Order');

  /** A single order as every operation answers it: with its line items (immutable, so read after the change). */
  const withLineItems = async (workspaceId: string, row: OrderRow) => toView(row, (await findLineItems(ctx.db, workspaceId, [row.id])).get(row.id));

  app.post<{ Body: Static<typeof OrderCreate> }>('/orders', {
    config: { auth: write },
    schema: {
      ...common,
      operationId: 'createOrder',
      summary: 'Create an order from products of the workspace, snapshotting their names and prices',
      description:
        'Emits `order.created`. Each product must exist in the workspace, be active and have a price, and all prices must share one currency; ' +
        'otherwise 400 naming the line item. The order starts `pending`.',
      params: mount.params(),
      body: OrderCreate,
      response: { 201: OrderRef },
    },
    handler: async (request, reply) => {
      const workspaceId = request.workspace!.id;
      const now = ctx.clock.now();
      const creation = await prepareOrder(ctx.db, workspaceId, request.body, now);
      const [row] = await ctx.outbox.write<OrderRow>(creation.write);
      return reply.status(201).send(toView(row, creation.lineItems));
    },
  });

  app.get<{ Querystring: OrderListQueryInput }>('/orders', {
    config: { auth: read },
    schema: {
      ...common,
      operationId: 'listOrders',
      summary: 'List orders, newest first, with filters',
      params: mount.params(),
      querystring: OrderListQuery,
      response: { 200: OrderList },
    },
    handler: async (request) => {
      const { limit = DEFAULT_LIMIT, page, status, createdGte, createdLte } = request.query;
      const expand = parseExpand(request.query.expand, ORDER_EXPANDS);
      const workspaceId = request.workspace!.id;
      // The filters as given are bound into the cursor: changing one beside a page token is a 400.
      const binding = { list: 'orders', scope: workspaceId, limit, filters: { status, createdGte, createdLte } };
      const filters = { status, ...createdRange(request.query) };
      const result = await listOrders(ctx.db, workspaceId, filters, requestCursor(ctx, page, binding), limit);
      const lineItems = expand.has('lineItems') ? await findLineItems(ctx.db, workspaceId, result.rows.map((r) => r.id)) : null;
      return { data: result.rows.map((row) => toView(row, lineItems?.get(row.id))), ...pageUrls(ctx, request, binding, result, expand) };
    },
  });

  app.get<OrderParams>('/orders/:orderId', {
    config: { auth: read },
    schema: { ...common, operationId: 'getOrder', summary: 'Retrieve an order with its line items', params: orderParams, response: { 200: OrderRef } },
    handler: async (request) => {
      const workspaceId = request.workspace!.id;
      const row = await findOrder(ctx.db, workspaceId, orderIdOf(request.params));
      if (!row) throw notFound('order');
      return withLineItems(workspaceId, row);
    },
  });

  app.patch<OrderParams & { Body: Static<typeof OrderUpdate> }>('/orders/:orderId', {
    config: { auth: write },
    schema: {
      ...common,
      operationId: 'updateOrder',
      summary: "Update an order's metadata or customer e-mail (event order.updated)",
      params: orderParams,
      body: OrderUpdate,
      response: { 200: OrderRef },
    },
    handler: async (request) => {
      const id = orderIdOf(request.params);
      const workspaceId = request.workspace!.id;
      const now = ctx.clock.now();
      const [row] = await ctx.outbox.write<OrderRow>(updateOrder(workspaceId, id, request.body, now));
      if (!row) throw notFound('order');
      return withLineItems(workspaceId, row);
    },
  });

  for (const name of Object.keys(ORDER_ACTIONS) as OrderActionName[]) {
    const action = ORDER_ACTIONS[name];
    app.post<OrderParams>(`/orders/:orderId/${name}`, {
      config: { auth: write, errors: ['INVALID_STATE'] },
      schema: {
        ...common,
        operationId: `${name}Order`,
        summary: `${action.summary} (event ${action.event}; 409 INVALID_STATE from any other status)`,
        description: `Emits \`${action.event}\`. From any other status: 409 \`INVALID_STATE\`, whose message names the current status and the actions allowed from it.`,
        params: orderParams,
        response: { 200: OrderRef },
      },
      handler: async (request) => {
        const id = orderIdOf(request.params);
        const workspaceId = request.workspace!.id;
        const now = ctx.clock.now();
        const [row] = await ctx.outbox.write<OrderRow>(transitionOrder(workspaceId, id, name, now));
        if (row) return withLineItems(workspaceId, row);
        // Nothing changed: either there is no such order, or its status does not allow the action.
        const current = await findOrder(ctx.db, workspaceId, id);
        if (!current) throw notFound('order');
        throw invalidState(id, current.status, name);
      },
    });
  }
}
