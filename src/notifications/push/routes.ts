import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { notFound } from '../../http/errors.js';
import { ListOf, refusePage, wholeList } from '../../http/list.js';
import { IdParam } from '../../http/mount.js';
import { PageQuery } from '../../http/pagination.js';
import { isId } from '../../lib/ids.js';
import { exampleId } from '../../openapi/examples.js';
import { userIdOf } from '../routes.js';
import { MAX_DEVICES, deleteDevice, listDevices, saveDevice, toView } from './devices.js';
import { checkSubscription } from './subscription.js';

/** A user's own devices: personal access tokens and dashboard sessions (which are such tokens); API keys get 403. */
const user = { scope: 'user' } as const;
const common = { tags: ['Notifications'] };

export const PushDevice = Type.Object(
  {
    id: Type.String({ description: 'pdv_...', examples: [exampleId('pdv')] }),
    name: Type.String({ examples: ['Laptop, Firefox'] }),
    pushService: Type.String({ description: "The host of the browser's push service (e.g. fcm.googleapis.com); the endpoint URL itself is never shown.", examples: ['fcm.googleapis.com'] }),
    createdAt: Type.String({ format: 'date-time' }),
    lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'When its push service last accepted a message; null until then.' }),
  },
  { $id: 'PushDevice', description: 'A browser registered for Web Push: every notification of its user is pushed to it too.' },
);

const PushDeviceCreate = Type.Object(
  {
    endpoint: Type.String({ minLength: 1, maxLength: 2048, description: "The subscription's push service URL (https).", examples: ['https://fcm.googleapis.com/fcm/send/c1KrmpTuRm0:APA91bF'] }),
    keys: Type.Object(
      {
        p256dh: Type.String({
          minLength: 1,
          maxLength: 128,
          description: "The browser's P-256 public key, base64url (65 bytes).",
          examples: ['BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM'],
        }),
        auth: Type.String({ minLength: 1, maxLength: 64, description: 'The authentication secret, base64url (16 bytes).', examples: ['tBHItJI5svbpez7KI4CCXg'] }),
      },
      { additionalProperties: false },
    ),
    expirationTime: Type.Optional(
      Type.Union([Type.Number({ examples: [1795774800000] }), Type.Null()], {
        description: 'As PushSubscription.toJSON() gives it; not used (an expired subscription is removed at its first refused push).',
      }),
    ),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'How the device is listed; default "Browser".', examples: ['Laptop, Firefox'] })),
  },
  { additionalProperties: false, description: 'A Web Push subscription as PushSubscription.toJSON() gives it, and a name.' },
);

const ListQuery = Type.Object(PageQuery, { additionalProperties: false });
const DeviceParams = Type.Object({ deviceId: IdParam('pdv', 'Push device id (pdv_...).') });

export function pushDeviceRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get<{ Querystring: Static<typeof ListQuery> }>('/me/push-devices', {
    config: { auth: user },
    schema: {
      ...common,
      operationId: 'listPushDevices',
      summary: "The calling token's user's push devices, oldest first (a small set: both page URLs null)",
      querystring: ListQuery,
      response: { 200: ListOf(Type.Ref('PushDevice'), `Every push device of the user (at most ${MAX_DEVICES}).`) },
    },
    handler: async (request) => {
      refusePage(request.query.page);
      return wholeList((await listDevices(ctx.db, userIdOf(request.principal))).map(toView));
    },
  });

  app.post<{ Body: Static<typeof PushDeviceCreate> }>('/me/push-devices', {
    config: { auth: user },
    schema: {
      ...common,
      operationId: 'createPushDevice',
      summary: `Register a browser's Web Push subscription: every notification of the user is pushed to it too (a subscription registered already keeps its id, with its keys and name updated; at most ${MAX_DEVICES})`,
      body: PushDeviceCreate,
      response: { 201: Type.Ref('PushDevice') },
    },
    handler: async (request, reply) => {
      const userId = userIdOf(request.principal);
      const subscription = await checkSubscription(request.body, ctx.config.allowPrivateTargets);
      const row = await saveDevice(ctx.db, ctx.secrets, { userId, name: request.body.name ?? 'Browser', subscription }, ctx.clock.now());
      return reply.status(201).send(toView(row));
    },
  });

  app.delete<{ Params: Static<typeof DeviceParams> }>('/me/push-devices/:deviceId', {
    config: { auth: user },
    schema: {
      ...common,
      operationId: 'deletePushDevice',
      summary: "Remove one of the calling token's user's push devices: nothing more is pushed to it",
      params: DeviceParams,
      response: { 200: Type.Object({ id: Type.String({ examples: [exampleId('pdv')] }), deleted: Type.Literal(true) }) },
    },
    handler: async (request) => {
      const { deviceId } = request.params;
      if (!isId('pdv', deviceId) || !(await deleteDevice(ctx.db, userIdOf(request.principal), deviceId))) throw notFound('push device');
      return { id: deviceId, deleted: true as const };
    },
  });
}
