import { Type } from '@sinclair/typebox';
import { EXAMPLE_WORKSPACE_ID, exampleId } from '../http/examples.js';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/db.js';
import { ListOf, type ListContext } from '../http/list.js';
import { PageQuery } from '../http/pagination.js';
import { resource } from '../http/resource.js';
import type { Clock } from '../lib/clock.js';
import type { PushQueue } from './push/queue.js';
import { NOTIFICATION_CATALOG } from '../engine/notices.js';
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

const PushKey = Type.Object({
  publicKey: Type.String({
    description: "The service's VAPID public key (RFC 8292): a P-256 point in base64url, PushManager.subscribe's applicationServerKey.",
    examples: ['BGmnS3p0m0yRj6vJtYv1wzOd2HqRk2nV8tX3nWl0b3hCq1Pj7fZ9cA4uE5rT6yU7iO8pA9sD0fG1hJ2kL3zX4cV5bN'],
  }),
});

/** What the notification routes use of the service. */
export type NotificationDeps = ListContext & { db: Db; clock: Clock; push: { keys: Pick<PushQueue['keys'], 'publicKey'> } };

export function notificationRoutes(app: FastifyInstance, deps: NotificationDeps): void {
  const { db, clock } = deps;
  const notifications = resource(app, { path: '/notifications', tag: 'Notifications', item: { name: 'notificationId', prefix: 'ntf', noun: 'notification' }, read: user, write: user, pages: deps });

  notifications.list({
    operationId: 'listNotifications',
    summary: "The calling token's user's notifications, in every workspace, newest first (personal access tokens only)",
    query: ListQuery,
    response: ListOf(Notification, 'Notifications of the user, newest first.'),
    list: 'notifications',
    filters: ['unread'],
    rows: ({ owner, query, cursor, limit }) => listNotifications(db, owner, { unread: query.unread }, cursor, limit),
    view: toView,
  });

  const types = NOTIFICATION_CATALOG.map(({ type, description }) => ({ type, description }));
  notifications.all({
    path: '/types',
    operationId: 'listNotificationTypes',
    summary: 'The catalog of notification types a user can receive (a small set: both page URLs null)',
    response: ListOf(NotificationType, 'Every notification type.'),
    items: () => types,
  });

  notifications.get({
    path: '/push-key',
    operationId: 'getPushKey',
    summary: "The service's Web Push (VAPID) public key, to subscribe a browser with (personal access tokens only)",
    response: PushKey,
    handle: async () => ({ publicKey: await deps.push.keys.publicKey() }),
  });

  notifications.action({
    path: '/read',
    operationId: 'markNotificationRead',
    summary: "Mark one of the calling token's user's notifications read (again: no change)",
    response: Notification,
    handle: ({ owner, id }) => markNotificationRead(db, owner, id, clock.now()),
    view: toView,
  });
}
