import { Type, type Static } from '@sinclair/typebox';
import { EXAMPLE_WORKSPACE_ID, exampleId } from '../openapi/examples.js';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { notFound } from '../http/errors.js';
import { ListOf, pageUrls, requestCursor } from '../http/list.js';
import { IdParam, type Mount } from '../http/mount.js';
import { DEFAULT_LIMIT, PageQuery } from '../http/pagination.js';
import { isId } from '../lib/ids.js';
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

const ListQuery = Type.Object(PageQuery, { additionalProperties: false });

/** Key management lives under the workspace path only, and needs an Owner or Admin token. */
export function apiKeyRoutes(app: FastifyInstance, ctx: AppContext, mount: Mount): void {
  const common = { tags: ['API keys'] };

  app.get<{ Querystring: Static<typeof ListQuery> }>('/api-keys', {
    config: { auth: manage },
    schema: {
      ...common,
      operationId: 'listApiKeys',
      summary: 'List API keys of the workspace',
      params: mount.params(),
      querystring: ListQuery,
      response: { 200: ListOf(ApiKey, 'API keys, newest first.') },
    },
    handler: async (request) => {
      const { limit = DEFAULT_LIMIT, page } = request.query;
      const workspaceId = request.workspace!.id;
      const binding = { list: 'api-keys', scope: workspaceId, limit, filters: {} };
      const result = await listApiKeys(ctx.db, workspaceId, requestCursor(ctx, page, binding), limit);
      return { data: result.rows.map(toView), ...pageUrls(ctx, request, binding, result) };
    },
  });

  app.post<{ Body: Static<typeof ApiKeyCreate> }>('/api-keys', {
    config: { auth: manage },
    schema: {
      ...common,
      operationId: 'createApiKey',
      summary: 'Create an API key (the key is returned once)',
      params: mount.params(),
      body: ApiKeyCreate,
      response: { 201: CreatedApiKey },
    },
    handler: async (request, reply) => {
      const { name, test = false, rateLimit = null } = request.body;
      const { row, key } = await createApiKey(ctx.db, { workspaceId: request.workspace!.id, name, test, rateLimit }, ctx.clock.now());
      return reply.status(201).send({ ...toView(row), key });
    },
  });

  app.delete<{ Params: { keyId: string } }>('/api-keys/:keyId', {
    config: { auth: manage },
    schema: {
      ...common,
      operationId: 'revokeApiKey',
      summary: 'Revoke an API key, effective immediately',
      params: mount.params({ keyId: IdParam('key', 'API key id (key_...).') }),
      response: { 200: ApiKey },
    },
    handler: async (request) => {
      const { keyId } = request.params;
      const row = isId('key', keyId) ? await revokeApiKey(ctx.db, request.workspace!.id, keyId, ctx.clock.now()) : null;
      if (!row) throw notFound('API key');
      // This process forgets it now; others do when the NOTIFY arrives.
      ctx.credentials.forget(row.id);
      return toView(row);
    },
  });
}
