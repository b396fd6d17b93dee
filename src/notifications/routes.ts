import { Type, type Static } from '@sinclair/typebox';
import { EXAMPLE_WORKSPACE_ID, exampleId } from '../openapi/examples.js';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import type { Principal } from '../auth/principal.js';
import { forbidden, notFound } from '../http/errors.js';
import { ListOf, pageUrls, refusePage, requestCursor, wholeList } from '../http/list.js';
import { IdParam } from '../http/mount.js';
import { DEFAULT_LIMIT, PageQuery } from '../http/pagination.js';
import { isId } from '../lib/ids.js';
import { NOTIFICATION_CATALOG } from './catalog.js';
import { listNotifications, markNotificationRead, toView } from './store.js';

/** Notifications belong to a person, so only a personal access token has any; no workspace is bound. */
const user = { scope: 'user' } as const;

const Notification = Type.Object({
  id: Type.String({ description: 'ntf_...', examples: [exampleId('ntf')] }),
  type: Type.String({ description: 'What happened, e.g. webhook.endpoint.auto_disabled.', examples: ['webhook.endpoint.auto_disabled'] }),
  workspaceId: Type.String({ description: 'The workspace it happened in.', examples: [EXAMPLE_WORKSPACE_ID] }),
  subject: Type.Union(
    [
      Type.Object(
        {
          id: Type.String({ examples: [exampleId('whe')] }),
          type: Type.String({ examples: ['webhook_endpoint'] }),
          url: Type.Optional(Type.String({ examples: [`/v1/webhooks/endpoints/${exampleId('whe')}`] })),
        },
        { additionalProperties: true },
      ),
      Type.Null(),
    ],
    { description: 'The resource concerned, e.g. {id: "whe_...", type: "webhook_endpoint", url: "/v1/webhooks/endpoints/whe_..."}.' },
  ),
  message: Type.String({ description: 'A sentence for people.', examples: ['The webhook endpoint https://hooks.example.com/svc was disabled after 5 consecutive failed deliveries.'] }),
  createdAt: Type.String({ format: 'date-time' }),
  readAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

const ListQuery = Type.Object(
  { ...PageQuery, unread: Type.Optional(Type.Boolean({ description: 'true: only notifications not yet read; false: only read ones.' })) },
  { additionalProperties: false },
);

const NotificationType = Type.Object({
  type: Type.String({ description: 'e.g. webhook.endpoint.auto_disabled', examples: ['webhook.endpoint.auto_disabled'] }),
  description: Type.String({ description: 'When a user gets a notification of this type.', examples: ['A webhook endpoint of a workspace you can read was disabled after 5 consecutive failed deliveries.'] }),
});

const SmallListQuery = Type.Object(PageQuery, { additionalProperties: false });

const PushKey = Type.Object({
  publicKey: Type.String({
    description: "The service's VAPID public key (RFC 8292): a P-256 point in base64url, PushManager.subscribe's applicationServerKey.",
    examples: ['BGmnS3p0m0yRj6vJtYv1wzOd2HqRk2nV8tX3nWl0b3hCq1Pj7fZ9cA4uE5rT6yU7iO8pA9sD0fG1hJ2kL3zX4cV5bN'],
  }),
});

/** The calling token's user (the auth hook already refuses API keys here; this narrows the type). */
export function userIdOf(principal: Principal | null): string {
  if (principal?.kind !== 'pat') throw forbidden('This operation needs a personal access token.');
  return principal.userId;
}

export function notificationRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get<{ Querystring: Static<typeof ListQuery> }>('/notifications', {
    config: { auth: user },
    schema: {
      tags: ['Notifications'],
      operationId: 'listNotifications',
      summary: "The calling token's user's notifications, in every workspace, newest first (personal access tokens only)",
      querystring: ListQuery,
      response: { 200: ListOf(Notification, 'Notifications of the user, newest first.') },
    },
    handler: async (request) => {
      const { limit = DEFAULT_LIMIT, page, unread } = request.query;
      const userId = userIdOf(request.principal);
      const binding = { list: 'notifications', scope: userId, limit, filters: { unread: unread === undefined ? undefined : String(unread) } };
      const result = await listNotifications(ctx.db, userId, { unread }, requestCursor(ctx, page, binding), limit);
      return { data: result.rows.map(toView), ...pageUrls(ctx, request, binding, result) };
    },
  });

  app.get<{ Querystring: Static<typeof SmallListQuery> }>('/notifications/types', {
    config: { auth: user },
    schema: {
      tags: ['Notifications'],
      operationId: 'listNotificationTypes',
      summary: 'The catalog of notification types a user can receive (a small set: both page URLs null)',
      querystring: SmallListQuery,
      response: { 200: ListOf(NotificationType, 'Every notification type.') },
    },
    handler: async (request) => {
      refusePage(request.query.page);
      return wholeList(NOTIFICATION_CATALOG.map(({ type, description }) => ({ type, description })));
    },
  });

  app.get('/notifications/push-key', {
    config: { auth: user },
    schema: {
      tags: ['Notifications'],
      operationId: 'getPushKey',
      summary: "The service's Web Push (VAPID) public key, to subscribe a browser with (personal access tokens only)",
      response: { 200: PushKey },
    },
    handler: async () => ({ publicKey: await ctx.push.keys.publicKey() }),
  });

  app.post<{ Params: { notificationId: string } }>('/notifications/:notificationId/read', {
    config: { auth: user },
    schema: {
      tags: ['Notifications'],
      operationId: 'markNotificationRead',
      summary: "Mark one of the calling token's user's notifications read (again: no change)",
      params: Type.Object({ notificationId: IdParam('ntf', 'Notification id (ntf_...).') }),
      response: { 200: Notification },
    },
    handler: async (request) => {
      const userId = userIdOf(request.principal);
      const { notificationId } = request.params;
      const row = isId('ntf', notificationId) ? await markNotificationRead(ctx.db, userId, notificationId, ctx.clock.now()) : null;
      if (!row) throw notFound('notification');
      return toView(row);
    },
  });
}
