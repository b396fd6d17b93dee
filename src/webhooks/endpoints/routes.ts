import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { EVENT_CATALOG } from '../../events/catalog.js';
import { notFound } from '../../http/errors.js';
import { parseExpand } from '../../http/expand.js';
import { pageUrls, refusePage, requestCursor, wholeList } from '../../http/list.js';
import { IdParam, WorkspaceHeader, type Mount } from '../../http/mount.js';
import { DEFAULT_LIMIT, PageQuery } from '../../http/pagination.js';
import { isId, newId } from '../../lib/ids.js';
import { toIso } from '../../lib/iso.js';
import { enqueue } from '../../outbox/deliveries.js';
import { StatsQuery, type StatsQueryInput } from '../attempts/schemas.js';
import { endpointStats } from '../attempts/stats.js';
import { disablePendingDeliveries, unorderPendingDeliveries } from '../deliveries/store.js';
import { checkHeaders, sealHeaders } from './headers.js';
import {
  CreatedWebhookEndpoint,
  ENDPOINT_EXPANDS,
  EndpointCreate,
  EndpointDeleted,
  EndpointList,
  EndpointListQuery,
  EndpointUpdate,
  EventTypeList,
  RotatedSecret,
  TestEventSent,
  checkSubscriptions,
  endpointInactive,
} from './schemas.js';
import { checkTarget, checkUrl } from './target.js';
import { checkRoute, kindOf, sealUrl, type Route } from './destination.js';
import { createEndpoint, deleteEndpoint, findEndpoint, listEndpoints, lockEndpoint, rotateSecret, toView, updateEndpoint } from './store.js';

const read = { scope: 'workspace', permission: 'workspace:developer:read' } as const;
const write = { scope: 'workspace', permission: 'workspace:developer:write' } as const;
const SmallListQuery = Type.Object(PageQuery, { additionalProperties: false });
type EndpointParams = { Params: { endpointId: string } };

/** Whether the caller may change endpoints, and so see their headers' values (toView). */
function revealsHeaders(request: FastifyRequest): boolean {
  return request.workspace!.permissions.includes(write.permission);
}

/** An id of the wrong shape can never exist: it is a 404 like an unknown one, before any query. */
function endpointIdOf(params: { endpointId: string }): string {
  if (!isId('whe', params.endpointId)) throw notFound('webhook endpoint');
  return params.endpointId;
}

/**
 * The route fields a PATCH writes: those given, checked against the URL the endpoint will have; a
 * new URL of another destination clears the old one's fields (null), so none is left that does not
 * belong. 404 for an endpoint that does not exist.
 */
async function routeChanges(ctx: AppContext, workspaceId: string, id: string, target: string | undefined, body: Partial<Route>): Promise<Partial<Route>> {
  const current = await findEndpoint(ctx.db, workspaceId, id);
  if (!current) throw notFound('webhook endpoint');
  const kind = kindOf(target ?? current.url)!;
  checkRoute(kind, body);
  const changes: Partial<Route> = { exchange: body.exchange, routingKey: body.routingKey, subject: body.subject };
  if (target !== undefined && kind !== kindOf(current.url)) {
    if (kind !== 'amqp') {
      changes.exchange = null;
      changes.routingKey = null;
    }
    if (kind !== 'nats') changes.subject = null;
  }
  return changes;
}

export function webhookEndpointRoutes(app: FastifyInstance, ctx: AppContext, mount: Mount): void {
  const endpointParams = mount.params({ endpointId: IdParam('whe', 'Webhook endpoint id (whe_...).') });
  const common = { tags: ['Webhook endpoints'], headers: WorkspaceHeader };
  const Endpoint = Type.Ref('WebhookEndpoint');
  const Stats = Type.Ref('WebhookEndpointStats');

  app.post<{ Body: Static<typeof EndpointCreate> }>('/webhooks/endpoints', {
    config: { auth: write },
    schema: {
      ...common,
      operationId: 'createWebhookEndpoint',
      summary: 'Create a webhook endpoint (the signing secret is returned once)',
      params: mount.params(),
      body: EndpointCreate,
      response: { 201: CreatedWebhookEndpoint },
    },
    handler: async (request, reply) => {
      const { url, subscribedEvents, description, rateLimit, headers, ordering, signatureScheme, exchange, routingKey, subject, propagateTrace } = request.body;
      const target = checkUrl(url, ctx.config.allowPrivateTargets);
      const route = { exchange, routingKey, subject };
      checkRoute(kindOf(target)!, route);
      await checkTarget(target, ctx.config.allowPrivateTargets);
      const input = {
        workspaceId: request.workspace!.id,
        url: target,
        subscribedEvents: checkSubscriptions(subscribedEvents),
        description,
        rateLimit,
        headers: headers ? checkHeaders(headers) : null,
        ordering,
        signatureScheme,
        route,
        propagateTrace,
      };
      const { row, secret } = await createEndpoint(ctx.db, ctx.secrets, input, ctx.clock.now());
      const view = toView(row, ctx.secrets, true);
      // A v1a endpoint's private key never leaves the service: receivers verify with publicKey.
      return reply.status(201).send(row.signature_scheme === 'v1a' ? view : { ...view, secret });
    },
  });

  app.get<{ Querystring: Static<typeof EndpointListQuery> }>('/webhooks/endpoints', {
    config: { auth: read },
    schema: {
      ...common,
      operationId: 'listWebhookEndpoints',
      summary: 'List webhook endpoints, newest first; expand=stats adds each one\'s last 24 hours',
      params: mount.params(),
      querystring: EndpointListQuery,
      response: { 200: EndpointList },
    },
    handler: async (request) => {
      const { limit = DEFAULT_LIMIT, page } = request.query;
      const expand = parseExpand(request.query.expand, ENDPOINT_EXPANDS);
      const workspaceId = request.workspace!.id;
      const binding = { list: 'webhook-endpoints', scope: workspaceId, limit, filters: {} };
      const result = await listEndpoints(ctx.db, workspaceId, requestCursor(ctx, page, binding), limit);
      const reveal = revealsHeaders(request);
      const now = ctx.clock.now();
      // One statement per endpoint of the page (about a millisecond each, see stats.ts), run side by side.
      const stats = expand.has('stats') ? await Promise.all(result.rows.map((row) => endpointStats(ctx.db, row.id, '24h', now))) : null;
      const data = result.rows.map((row, i) => (stats ? { ...toView(row, ctx.secrets, reveal), stats: stats[i] } : toView(row, ctx.secrets, reveal)));
      return { data, ...pageUrls(ctx, request, binding, result, expand) };
    },
  });

  // Registered beside /:endpointId; the router prefers this static path, and no id can equal it.
  app.get<{ Querystring: Static<typeof SmallListQuery> }>('/webhooks/endpoints/event-types', {
    config: { auth: read },
    schema: {
      ...common,
      operationId: 'listEventTypes',
      summary: 'The catalog of event types valid in subscribedEvents (a small set: both page URLs null)',
      params: mount.params(),
      querystring: SmallListQuery,
      response: { 200: EventTypeList },
    },
    handler: async (request) => {
      refusePage(request.query.page);
      return wholeList(EVENT_CATALOG.map(({ type, description }) => ({ type, description })));
    },
  });

  app.get<EndpointParams>('/webhooks/endpoints/:endpointId', {
    config: { auth: read },
    schema: { ...common, operationId: 'getWebhookEndpoint', summary: 'Retrieve a webhook endpoint (without its secret)', params: endpointParams, response: { 200: Endpoint } },
    handler: async (request) => {
      const row = await findEndpoint(ctx.db, request.workspace!.id, endpointIdOf(request.params));
      if (!row) throw notFound('webhook endpoint');
      return toView(row, ctx.secrets, revealsHeaders(request));
    },
  });

  app.get<EndpointParams & { Querystring: StatsQueryInput }>('/webhooks/endpoints/:endpointId/stats', {
    config: { auth: read },
    schema: {
      ...common,
      operationId: 'getEndpointStats',
      summary: "An endpoint's attempts over the last hour, day or week: counts, success rate, latency percentiles and a time series",
      params: endpointParams,
      querystring: StatsQuery,
      response: { 200: Stats },
    },
    handler: async (request) => {
      const id = endpointIdOf(request.params);
      if (!(await findEndpoint(ctx.db, request.workspace!.id, id))) throw notFound('webhook endpoint');
      return endpointStats(ctx.db, id, request.query.window ?? '24h', ctx.clock.now());
    },
  });

  app.patch<EndpointParams & { Body: Static<typeof EndpointUpdate> }>('/webhooks/endpoints/:endpointId', {
    config: { auth: write },
    schema: {
      ...common,
      operationId: 'updateWebhookEndpoint',
      summary: 'Update a webhook endpoint; active false pauses it, active true re-enables it',
      params: endpointParams,
      body: EndpointUpdate,
      response: { 200: Endpoint },
    },
    handler: async (request) => {
      const id = endpointIdOf(request.params);
      const { url, subscribedEvents, description, rateLimit, headers, ordering, propagateTrace, alerts, active } = request.body;
      const target = url === undefined ? undefined : checkUrl(url, ctx.config.allowPrivateTargets);
      const route = await routeChanges(ctx, request.workspace!.id, id, target, request.body);
      if (target !== undefined) await checkTarget(target, ctx.config.allowPrivateTargets);
      const changes = {
        ...route,
        url: target === undefined ? undefined : sealUrl(ctx.secrets, target),
        subscribedEvents: subscribedEvents === undefined ? undefined : checkSubscriptions(subscribedEvents),
        description,
        rateLimit,
        headersEnc: headers === undefined ? undefined : sealHeaders(ctx.secrets, headers === null ? null : checkHeaders(headers)),
        ordering,
        propagateTrace,
        alerts,
        active,
      };
      const row = await ctx.db.tx(async (q) => {
        const updated = await updateEndpoint(q, request.workspace!.id, id, changes, ctx.clock.now());
        // Pausing stops what is already queued too, in the same transaction as the flag.
        if (updated && active === false) await disablePendingDeliveries(q, id);
        // Turning ordering off lets what waits behind a failing delivery go at once.
        if (updated && ordering === 'none') await unorderPendingDeliveries(q, id);
        return updated;
      });
      if (!row) throw notFound('webhook endpoint');
      return toView(row, ctx.secrets, true);
    },
  });

  app.delete<EndpointParams>('/webhooks/endpoints/:endpointId', {
    config: { auth: write },
    schema: {
      ...common,
      operationId: 'deleteWebhookEndpoint',
      summary: 'Delete a webhook endpoint; queued deliveries become disabled, the delivery history stays',
      params: endpointParams,
      response: { 200: EndpointDeleted },
    },
    handler: async (request) => {
      const id = endpointIdOf(request.params);
      const deleted = await ctx.db.tx(async (q) => {
        const done = await deleteEndpoint(q, request.workspace!.id, id, ctx.clock.now());
        if (done) await disablePendingDeliveries(q, id);
        return done;
      });
      if (!deleted) throw notFound('webhook endpoint');
      return { id, deleted: true as const };
    },
  });

  app.post<EndpointParams>('/webhooks/endpoints/:endpointId/rotate-secret', {
    config: { auth: write },
    schema: {
      ...common,
      operationId: 'rotateWebhookEndpointSecret',
      summary: 'Issue a new signing secret; the previous one keeps signing for 24 hours',
      params: endpointParams,
      response: { 200: RotatedSecret },
    },
    handler: async (request) => {
      const rotated = await rotateSecret(ctx.db, ctx.secrets, request.workspace!.id, endpointIdOf(request.params), ctx.clock.now());
      if (!rotated) throw notFound('webhook endpoint');
      const expires = toIso(rotated.previousSecretExpiresAt);
      return rotated.secret === null ? { publicKey: rotated.publicKey!, previousSecretExpiresAt: expires } : { secret: rotated.secret, previousSecretExpiresAt: expires };
    },
  });

  app.post<EndpointParams>('/webhooks/endpoints/:endpointId/send-test-event', {
    config: { auth: write, errors: ['ENDPOINT_INACTIVE'] },
    schema: {
      ...common,
      operationId: 'sendWebhookTestEvent',
      summary: 'Queue a webhook.ping delivery to this endpoint (409 when it is not active)',
      params: endpointParams,
      response: { 201: TestEventSent },
    },
    handler: async (request, reply) => {
      const id = endpointIdOf(request.params);
      const workspaceId = request.workspace!.id;
      const now = ctx.clock.now();
      const sent = await ctx.db.tx(async (q) => {
        const endpoint = await lockEndpoint(q, workspaceId, id);
        if (!endpoint || endpoint.deleted_at) throw notFound('webhook endpoint');
        if (!endpoint.active) throw endpointInactive(endpoint);
        // A synthetic event: sent to this endpoint only, never written to the event log.
        const eventId = newId('evt', now);
        const payload = JSON.stringify({ id: eventId, type: 'webhook.ping', created: toIso(now) });
        const [deliveryId] = await enqueue(q, [{ workspaceId, endpointId: id, eventId, eventType: 'webhook.ping', payload, replayOf: null }], now);
        return { deliveryId, eventId };
      });
      return reply.status(201).send(sent);
    },
  });
}
