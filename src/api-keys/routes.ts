import { Type } from '@sinclair/typebox';
import { EXAMPLE_WORKSPACE_ID, exampleId } from '../http/examples.js';
import type { FastifyInstance } from 'fastify';
import type { CredentialCache } from '../http/auth/cache.js';
import type { Db } from '../db/db.js';
import { ListOf, type ListContext } from '../http/list.js';
import type { Mount } from '../http/mount.js';
import { resource } from '../http/resource.js';
import type { Clock } from '../lib/clock.js';
import { createApiKey, listApiKeys, revokeApiKey, toView } from './store.js';

const manage = { scope: 'workspace', permission: 'workspace:api_keys:manage' } as const;

const ApiKey = Type.Object({
  id: Type.String({ description: 'key_...', examples: [exampleId('key')] }),
  workspaceId: Type.String({ examples: [EXAMPLE_WORKSPACE_ID] }),
  name: Type.String({ examples: ['Checkout service'] }),
  prefix: Type.String({ description: 'The start of the key, for recognising it.', examples: ['svc_sk_4fT9'] }),
  test: Type.Boolean(),
  rateLimit: Type.Union([Type.Integer({ examples: [600] }), Type.Null()], { description: 'Requests per minute; null for the default.' }),
  createdAt: Type.String({ format: 'date-time' }),
  revokedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

const CreatedApiKey = Type.Composite([
  ApiKey,
  Type.Object({ key: Type.String({ description: 'The whole key, returned this once.', examples: ['svc_sk_4fT9qLm2Xv7Rk1Pz8Wc3Nb6Hy0Jd5Ga2ET6pQ1'] }) }),
]);

const ApiKeyCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, examples: ['Checkout service'] }),
    test: Type.Optional(Type.Boolean({ description: 'Issue a test key (svc_sk_test_...).' })),
    rateLimit: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 1_000_000, examples: [600] }), Type.Null()])),
  },
  { additionalProperties: false },
);

/** What the API key routes use of the service. */
export type ApiKeyDeps = ListContext & { db: Db; clock: Clock; credentials: Pick<CredentialCache, 'forget'> };

/** Key management lives under the workspace path only, and needs an Owner or Admin token. */
export function apiKeyRoutes(app: FastifyInstance, deps: ApiKeyDeps, mount: Mount): void {
  const { db, clock } = deps;
  const keys = resource(app, { path: '/api-keys', tag: 'API keys', mount, item: { name: 'keyId', prefix: 'key', noun: 'API key' }, read: manage, write: manage, pages: deps });

  keys.list({
    operationId: 'listApiKeys',
    summary: 'List API keys of the workspace',
    response: ListOf(ApiKey, 'API keys, newest first.'),
    list: 'api-keys',
    rows: ({ owner, cursor, limit }) => listApiKeys(db, owner, cursor, limit),
    view: toView,
  });

  keys.create({
    operationId: 'createApiKey',
    summary: 'Create an API key (the key is returned once)',
    body: ApiKeyCreate,
    response: CreatedApiKey,
    handle: async ({ owner, body }) => {
      const { name, test = false, rateLimit = null } = body;
      const { row, key } = await createApiKey(db, { workspaceId: owner, name, test, rateLimit }, clock.now());
      return { ...toView(row), key };
    },
  });

  keys.item('DELETE', {
    operationId: 'revokeApiKey',
    summary: 'Revoke an API key, effective immediately',
    response: ApiKey,
    handle: async ({ owner, id }) => {
      const row = await revokeApiKey(db, owner, id, clock.now());
      if (!row) return null;
      // This process forgets it now; others do when the NOTIFY arrives.
      deps.credentials.forget(row.id);
      return toView(row);
    },
  });
}
