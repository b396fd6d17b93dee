import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Db } from '../../db/db.js';
import { EVENT_CATALOG } from '../../engine/log/catalog.js';
import { notFound } from '../../http/errors.js';
import type { ListContext } from '../../http/list.js';
import { WorkspaceHeader, type Mount } from '../../http/mount.js';
import { resource } from '../../http/resource.js';
import type { Clock } from '../../lib/clock.js';
import { toIso } from '../../lib/iso.js';
import type { SecretBox } from '../../lib/secretbox.js';
import { StatsQuery } from '../attempts/schemas.js';
import { endpointStats } from '../attempts/stats.js';
import { unorderPendingDeliveries } from '../deliveries/store.js';
import { disablePendingDeliveries } from '../../engine/delivery/auto-disable.js';
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
} from './schemas.js';
import { sendTestEvent } from './ping.js';
import { checkTarget, checkUrl } from './target.js';
import { checkRoute, kindOf, sealUrl, type Route } from './destination.js';
import { createEndpoint, deleteEndpoint, findEndpoint, listEndpoints, rotateSecret, toView, updateEndpoint } from './store.js';

const read = { scope: 'workspace', permission: 'workspace:developer:read' } as const;
const write = { scope: 'workspace', permission: 'workspace:developer:write' } as const;

/** Whether the caller may change endpoints, and so see their headers' values (toView). */
function revealsHeaders(request: FastifyRequest): boolean {
  return request.workspace!.permissions.includes(write.permission);
}

/**
 * The route fields a PATCH writes: those given, checked against the URL the endpoint will have; a
 * new URL of another destination clears the old one's fields (null), so none is left that does not
 * belong. 404 for an endpoint that does not exist.
 */
async function routeChanges(db: Db, workspaceId: string, id: string, target: string | undefined, body: Partial<Route>): Promise<Partial<Route>> {
  const current = await findEndpoint(db, workspaceId, id);
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

/** What the endpoint routes use of the service. */
export type EndpointDeps = ListContext & { db: Db; clock: Clock; secrets: SecretBox; config: ListContext['config'] & { allowPrivateTargets: boolean } };

export function webhookEndpointRoutes(app: FastifyInstance, deps: EndpointDeps, mount: Mount): void {
  const { db, clock, secrets, config } = deps;
  const endpoints = resource(app, { path: '/webhooks/endpoints', tag: 'Webhook endpoints', mount, headers: WorkspaceHeader, item: { name: 'endpointId', prefix: 'whe', noun: 'webhook endpoint' }, read, write, pages: deps });
  const Endpoint = Type.Ref('WebhookEndpoint');

  endpoints.create({
    operationId: 'createWebhookEndpoint',
    summary: 'Create a webhook endpoint (the signing secret is returned once)',
    body: EndpointCreate,
    response: CreatedWebhookEndpoint,
    handle: async ({ owner, body }) => {
      const { url, subscribedEvents, description, rateLimit, headers, ordering, signatureScheme, exchange, routingKey, subject, propagateTrace } = body;
      const target = checkUrl(url, config.allowPrivateTargets);
      const route = { exchange, routingKey, subject };
      checkRoute(kindOf(target)!, route);
      await checkTarget(target, config.allowPrivateTargets);
      const input = {
        workspaceId: owner,
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
      const { row, secret } = await createEndpoint(db, secrets, input, clock.now());
      const view = toView(row, secrets, true);
      // A v1a endpoint's private key never leaves the service: receivers verify with publicKey.
      return row.signature_scheme === 'v1a' ? view : { ...view, secret };
    },
  });

  endpoints.list({
    operationId: 'listWebhookEndpoints',
    summary: 'List webhook endpoints, newest first; expand=stats adds each one\'s last 24 hours',
    query: EndpointListQuery,
    response: EndpointList,
    list: 'webhook-endpoints',
    expand: ENDPOINT_EXPANDS,
    rows: ({ owner, cursor, limit }) => listEndpoints(db, owner, cursor, limit),
    data: async (rows, { request, expand }) => {
      const reveal = revealsHeaders(request);
      const now = clock.now();
      // One statement per endpoint of the page (about a millisecond each, see stats.ts), run side by side.
      const stats = expand.has('stats') ? await Promise.all(rows.map((row) => endpointStats(db, row.id, '24h', now))) : null;
      return rows.map((row, i) => (stats ? { ...toView(row, secrets, reveal), stats: stats[i] } : toView(row, secrets, reveal)));
    },
  });

  // Registered beside /:endpointId; the router prefers this static path, and no id can equal it.
  const eventTypes = EVENT_CATALOG.map(({ type, description }) => ({ type, description }));
  endpoints.all({
    path: '/event-types',
    operationId: 'listEventTypes',
    summary: 'The catalog of event types valid in subscribedEvents (a small set: both page URLs null)',
    response: EventTypeList,
    items: () => eventTypes,
  });

  endpoints.retrieve({
    operationId: 'getWebhookEndpoint',
    summary: 'Retrieve a webhook endpoint (without its secret)',
    response: Endpoint,
    handle: async ({ owner, id, request }) => {
      const row = await findEndpoint(db, owner, id);
      return row && toView(row, secrets, revealsHeaders(request));
    },
  });

  endpoints.retrieve({
    path: '/stats',
    operationId: 'getEndpointStats',
    summary: "An endpoint's attempts over the last hour, day or week: counts, success rate, latency percentiles and a time series",
    query: StatsQuery,
    response: Type.Ref('WebhookEndpointStats'),
    handle: async ({ owner, id, query }) => {
      if (!(await findEndpoint(db, owner, id))) return null;
      return endpointStats(db, id, query.window ?? '24h', clock.now());
    },
  });

  endpoints.update({
    operationId: 'updateWebhookEndpoint',
    summary: 'Update a webhook endpoint; active false pauses it, active true re-enables it',
    body: EndpointUpdate,
    response: Endpoint,
    handle: async ({ owner, id, body }) => {
      const { url, subscribedEvents, description, rateLimit, headers, ordering, propagateTrace, alerts, active } = body;
      const target = url === undefined ? undefined : checkUrl(url, config.allowPrivateTargets);
      const route = await routeChanges(db, owner, id, target, body);
      if (target !== undefined) await checkTarget(target, config.allowPrivateTargets);
      const changes = {
        ...route,
        url: target === undefined ? undefined : sealUrl(secrets, target),
        subscribedEvents: subscribedEvents === undefined ? undefined : checkSubscriptions(subscribedEvents),
        description,
        rateLimit,
        headersEnc: headers === undefined ? undefined : sealHeaders(secrets, headers === null ? null : checkHeaders(headers)),
        ordering,
        propagateTrace,
        alerts,
        active,
      };
      const row = await db.tx(async (q) => {
        const updated = await updateEndpoint(q, owner, id, changes, clock.now());
        // Pausing stops what is already queued too, in the same transaction as the flag.
        if (updated && active === false) await disablePendingDeliveries(q, id);
        // Turning ordering off lets what waits behind a failing delivery go at once.
        if (updated && ordering === 'none') await unorderPendingDeliveries(q, id);
        return updated;
      });
      return row && toView(row, secrets, true);
    },
  });

  endpoints.remove({
    operationId: 'deleteWebhookEndpoint',
    summary: 'Delete a webhook endpoint; queued deliveries become disabled, the delivery history stays',
    response: EndpointDeleted,
    handle: ({ owner, id }) =>
      db.tx(async (q) => {
        const done = await deleteEndpoint(q, owner, id, clock.now());
        if (done) await disablePendingDeliveries(q, id);
        return done;
      }),
  });

  endpoints.action({
    path: '/rotate-secret',
    operationId: 'rotateWebhookEndpointSecret',
    summary: 'Issue a new signing secret; the previous one keeps signing for 24 hours',
    response: RotatedSecret,
    handle: async ({ owner, id }) => {
      const rotated = await rotateSecret(db, secrets, owner, id, clock.now());
      if (!rotated) return null;
      const expires = toIso(rotated.previousSecretExpiresAt);
      return rotated.secret === null ? { publicKey: rotated.publicKey!, previousSecretExpiresAt: expires } : { secret: rotated.secret, previousSecretExpiresAt: expires };
    },
  });

  endpoints.action({
    path: '/send-test-event',
    errors: ['ENDPOINT_INACTIVE'],
    operationId: 'sendWebhookTestEvent',
    summary: 'Queue a webhook.ping delivery to this endpoint (409 when it is not active)',
    response: TestEventSent,
    status: 201,
    handle: ({ owner, id }) => sendTestEvent(db, owner, id, clock.now()),
  });
}
