import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../db/db.js';
import { ListOf } from '../../http/list.js';
import { resource } from '../../http/resource.js';
import type { Clock } from '../../lib/clock.js';
import type { SecretBox } from '../../lib/secretbox.js';
import { exampleId } from '../../http/examples.js';
import { MAX_DEVICES, deleteDevice, listDevices, saveDevice, toView } from './devices.js';
import { checkSubscription } from './subscription.js';

/** A user's own devices: personal access tokens and dashboard sessions (which are such tokens); API keys get 403. */
const user = { scope: 'user' } as const;

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


/** What the push device routes use of the service. */
export type PushDeviceDeps = { db: Db; clock: Clock; secrets: SecretBox; config: { allowPrivateTargets: boolean } };

export function pushDeviceRoutes(app: FastifyInstance, { db, clock, secrets, config }: PushDeviceDeps): void {
  const devices = resource(app, { path: '/me/push-devices', tag: 'Notifications', item: { name: 'deviceId', prefix: 'pdv', noun: 'push device' }, read: user, write: user });

  devices.all({
    operationId: 'listPushDevices',
    summary: "The calling token's user's push devices, oldest first (a small set: both page URLs null)",
    response: ListOf(Type.Ref('PushDevice'), `Every push device of the user (at most ${MAX_DEVICES}).`),
    items: async ({ owner }) => (await listDevices(db, owner)).map(toView),
  });

  devices.create({
    operationId: 'createPushDevice',
    summary: `Register a browser's Web Push subscription: every notification of the user is pushed to it too (a subscription registered already keeps its id, with its keys and name updated; at most ${MAX_DEVICES})`,
    body: PushDeviceCreate,
    response: Type.Ref('PushDevice'),
    handle: async ({ owner, body }) => {
      const subscription = await checkSubscription(body, config.allowPrivateTargets);
      return toView(await saveDevice(db, secrets, { userId: owner, name: body.name ?? 'Browser', subscription }, clock.now()));
    },
  });

  devices.remove({
    operationId: 'deletePushDevice',
    summary: "Remove one of the calling token's user's push devices: nothing more is pushed to it",
    response: Type.Object({ id: Type.String({ examples: [exampleId('pdv')] }), deleted: Type.Literal(true) }),
    handle: ({ owner, id }) => deleteDevice(db, owner, id),
  });
}
