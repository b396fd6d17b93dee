import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { forbidden } from '../http/errors.js';
import { ListOf, pageUrls, requestCursor } from '../http/list.js';
import { DEFAULT_LIMIT, PageQuery } from '../http/pagination.js';
import { listNotifications, toView } from './store.js';

/** Notifications belong to a person, so only a personal access token has any; no workspace is bound. */
const user = { scope: 'user' } as const;

const Notification = Type.Object({
  id: Type.String({ description: 'ntf_...' }),
  type: Type.String({ description: 'What happened, e.g. webhook.endpoint.auto_disabled.' }),
  workspaceId: Type.String({ description: 'The workspace it happened in.' }),
  subject: Type.Union(
    [Type.Object({ id: Type.String(), type: Type.String(), url: Type.Optional(Type.String()) }, { additionalProperties: true }), Type.Null()],
    { description: 'The resource concerned, e.g. {id: "whe_...", type: "webhook_endpoint", url: "/v1/webhooks/endpoints/whe_..."}.' },
  ),
  message: Type.String({ description: 'A sentence for people.' }),
  createdAt: Type.String({ format: 'date-time' }),
  readAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

const ListQuery = Type.Object(PageQuery, { additionalProperties: false });

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
      const { limit = DEFAULT_LIMIT, page } = request.query;
      const principal = request.principal!;
      // The auth hook already refuses API keys here; this also narrows the type.
      if (principal.kind !== 'pat') throw forbidden('This operation needs a personal access token.');
      const { userId } = principal;
      const binding = { list: 'notifications', scope: userId, limit, filters: {} };
      const result = await listNotifications(ctx.db, userId, requestCursor(ctx, page, binding), limit);
      return { data: result.rows.map(toView), ...pageUrls(ctx, request, binding, result) };
    },
  });
}
