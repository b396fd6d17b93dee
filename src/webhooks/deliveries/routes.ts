import type { FastifyInstance } from 'fastify';
import type { Db } from '../../db/db.js';
import { createdRange } from '../../http/created-range.js';
import type { ListContext } from '../../http/list.js';
import { WorkspaceHeader, type Mount } from '../../http/mount.js';
import { resource } from '../../http/resource.js';
import type { Clock } from '../../lib/clock.js';
import { DeliveryList, DeliveryListQuery, Replayed, WebhookDeliveryDetail } from './schemas.js';
import { AttemptList } from '../attempts/schemas.js';
import { deliveryExists, listAttempts, toAttemptView } from '../attempts/store.js';
import { replayDelivery } from './replay.js';
import { findDelivery, listDeliveries, toDetailView, toListView } from './store.js';

const read = { scope: 'workspace', permission: 'workspace:developer:read' } as const;
const write = { scope: 'workspace', permission: 'workspace:developer:write' } as const;

/** What the delivery routes use of the service. */
export type DeliveryDeps = ListContext & { db: Db; clock: Clock };

export function webhookDeliveryRoutes(app: FastifyInstance, deps: DeliveryDeps, mount: Mount): void {
  const { db, clock } = deps;
  const deliveries = resource(app, { path: '/webhooks/deliveries', tag: 'Webhook deliveries', mount, headers: WorkspaceHeader, item: { name: 'deliveryId', prefix: 'whd', noun: 'webhook delivery', exists: (owner, id) => deliveryExists(db, owner, id) }, read, write, pages: deps });

  deliveries.list({
    operationId: 'listWebhookDeliveries',
    summary: 'List webhook deliveries, newest first, with filters',
    query: DeliveryListQuery,
    response: DeliveryList,
    list: 'webhook-deliveries',
    // The filters as given are bound into the cursor: changing one beside a page token is a 400.
    filters: ['endpointId', 'eventId', 'status', 'eventType', 'createdGte', 'createdLte'],
    where: (query) => ({ endpointId: query.endpointId, eventId: query.eventId, status: query.status, eventType: query.eventType, ...createdRange(query) }),
    rows: ({ owner, where, cursor, limit }) => listDeliveries(db, owner, where, cursor, limit),
    view: toListView,
  });

  deliveries.retrieve({
    operationId: 'getWebhookDelivery',
    summary: 'Retrieve a delivery with its request and last response',
    response: WebhookDeliveryDetail,
    handle: ({ owner, id }) => findDelivery(db, owner, id),
    view: (row) => ({ delivery: toDetailView(row) }),
  });

  deliveries.listOf({
    path: '/attempts',
    operationId: 'listDeliveryAttempts',
    summary: "List a delivery's attempts, newest first, each with its request headers and response",
    response: AttemptList,
    list: 'webhook-delivery-attempts',
    rows: ({ owner, id, cursor, limit }) => listAttempts(db, owner, id, cursor, limit),
    view: toAttemptView,
  });

  deliveries.action({
    path: '/replay',
    errors: ['ENDPOINT_INACTIVE'],
    operationId: 'replayWebhookDelivery',
    summary: 'Queue a new delivery with the same body (409 when the endpoint is not active)',
    response: Replayed,
    status: 201,
    handle: async ({ owner, id }) => ({ delivery: await replayDelivery(db, owner, id, clock.now()) }),
  });
}
