import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { createdRange } from '../../http/created-range.js';
import { notFound } from '../../http/errors.js';
import { pageUrls, requestCursor } from '../../http/list.js';
import { IdParam, WorkspaceHeader, type Mount } from '../../http/mount.js';
import { DEFAULT_LIMIT } from '../../http/pagination.js';
import { isId } from '../../lib/ids.js';
import { endpointInactive } from '../endpoints/schemas.js';
import { lockEndpoint } from '../endpoints/store.js';
import { DeliveryList, DeliveryListQuery, Replayed, WebhookDeliveryDetail, type DeliveryListQueryInput } from './schemas.js';
import { AttemptList, AttemptListQuery, type AttemptListQueryInput } from '../attempts/schemas.js';
import { deliveryExists, listAttempts, toAttemptView } from '../attempts/store.js';
import { queueReplays } from './replay.js';
import { findDelivery, listDeliveries, toDetailView, toListView, type DeliveryFilters } from './store.js';

const read = { scope: 'workspace', permission: 'workspace:developer:read' } as const;
const write = { scope: 'workspace', permission: 'workspace:developer:write' } as const;
type DeliveryParams = { Params: { deliveryId: string } };

function filtersOf(query: DeliveryListQueryInput): DeliveryFilters {
  return {
    endpointId: query.endpointId,
    eventId: query.eventId,
    status: query.status,
    eventType: query.eventType,
    ...createdRange(query),
  };
}

export function webhookDeliveryRoutes(app: FastifyInstance, ctx: AppContext, mount: Mount): void {
  const deliveryParams = mount.params({ deliveryId: IdParam('whd', 'Webhook delivery id (whd_...).') });
  const common = { tags: ['Webhook deliveries'], headers: WorkspaceHeader };

  app.get<{ Querystring: DeliveryListQueryInput }>('/webhooks/deliveries', {
    config: { auth: read },
    schema: {
      ...common,
      operationId: 'listWebhookDeliveries',
      summary: 'List webhook deliveries, newest first, with filters',
      params: mount.params(),
      querystring: DeliveryListQuery,
      response: { 200: DeliveryList },
    },
    handler: async (request) => {
      const { limit = DEFAULT_LIMIT, page, endpointId, eventId, status, eventType, createdGte, createdLte } = request.query;
      const workspaceId = request.workspace!.id;
      // The filters as given are bound into the cursor: changing one beside a page token is a 400.
      const binding = { list: 'webhook-deliveries', scope: workspaceId, limit, filters: { endpointId, eventId, status, eventType, createdGte, createdLte } };
      const filters = filtersOf(request.query);
      const result = await listDeliveries(ctx.db, workspaceId, filters, requestCursor(ctx, page, binding), limit);
      return { data: result.rows.map(toListView), ...pageUrls(ctx, request, binding, result) };
    },
  });

  app.get<DeliveryParams>('/webhooks/deliveries/:deliveryId', {
    config: { auth: read },
    schema: {
      ...common,
      operationId: 'getWebhookDelivery',
      summary: 'Retrieve a delivery with its request and last response',
      params: deliveryParams,
      response: { 200: WebhookDeliveryDetail },
    },
    handler: async (request) => {
      const { deliveryId } = request.params;
      const row = isId('whd', deliveryId) ? await findDelivery(ctx.db, request.workspace!.id, deliveryId) : null;
      if (!row) throw notFound('webhook delivery');
      return { delivery: toDetailView(row) };
    },
  });

  app.get<DeliveryParams & { Querystring: AttemptListQueryInput }>('/webhooks/deliveries/:deliveryId/attempts', {
    config: { auth: read },
    schema: {
      ...common,
      operationId: 'listDeliveryAttempts',
      summary: "List a delivery's attempts, newest first, each with its request headers and response",
      params: deliveryParams,
      querystring: AttemptListQuery,
      response: { 200: AttemptList },
    },
    handler: async (request) => {
      const { deliveryId } = request.params;
      const { limit = DEFAULT_LIMIT, page } = request.query;
      const workspaceId = request.workspace!.id;
      if (!isId('whd', deliveryId) || !(await deliveryExists(ctx.db, workspaceId, deliveryId))) throw notFound('webhook delivery');
      const binding = { list: 'webhook-delivery-attempts', scope: `${workspaceId}/${deliveryId}`, limit, filters: {} };
      const result = await listAttempts(ctx.db, workspaceId, deliveryId, requestCursor(ctx, page, binding), limit);
      return { data: result.rows.map(toAttemptView), ...pageUrls(ctx, request, binding, result) };
    },
  });

  app.post<DeliveryParams>('/webhooks/deliveries/:deliveryId/replay', {
    config: { auth: write, errors: ['ENDPOINT_INACTIVE'] },
    schema: {
      ...common,
      operationId: 'replayWebhookDelivery',
      summary: 'Queue a new delivery with the same body (409 when the endpoint is not active)',
      params: deliveryParams,
      response: { 201: Replayed },
    },
    handler: async (request, reply) => {
      const { deliveryId } = request.params;
      if (!isId('whd', deliveryId)) throw notFound('webhook delivery');
      const workspaceId = request.workspace!.id;
      const now = ctx.clock.now();
      const replayed = await ctx.db.tx(async (q) => {
        const original = await findDelivery(q, workspaceId, deliveryId);
        if (!original || original.body === null) throw notFound('webhook delivery');
        const endpoint = await lockEndpoint(q, workspaceId, original.endpoint_id);
        if (!endpoint) throw notFound('webhook delivery');
        if (endpoint.deleted_at || !endpoint.active) throw endpointInactive(endpoint);
        const [id] = await queueReplays(q, workspaceId, endpoint, [{ id: original.id, event_type: original.event_type, body: original.body }], now);
        return { id, endpointId: endpoint.id };
      });
      return reply.status(201).send({ delivery: replayed });
    },
  });
}
