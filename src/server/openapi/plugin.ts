import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { CompressedBody } from '../../http/compressed.js';
import { addPostHeaders, POST_HEADERS, type PostHeader } from './conventions.js';
import { registerDocs } from './docs.js';
import { swaggerOptions } from './document.js';

export interface OpenApiOptions {
  /** The service's address, for the document's `servers` (SVC_PUBLIC_URL). */
  publicUrl: string;
  /** Headers every POST under /v1 honours; POST_HEADERS unless a test tries others. */
  postHeaders?: readonly PostHeader[];
}

/**
 * The OpenAPI document (`/openapi.json`, built by @fastify/swagger from the route schemas with the
 * conventions of conventions.ts) and its rendered reference (`/docs`). Register before the routes:
 * each route gets its POST headers as it is added.
 */
export async function registerOpenApi(app: FastifyInstance, { publicUrl, postHeaders = POST_HEADERS }: OpenApiOptions): Promise<void> {
  await app.register(swagger, swaggerOptions(publicUrl, postHeaders));
  app.addHook('onRoute', (route) => addPostHeaders(route, postHeaders));
  // Built once, when first asked for (the routes are all registered by then), and sent compressed.
  let document: CompressedBody | null = null;
  app.get('/openapi.json', { schema: { hide: true } }, async (request, reply) => {
    document ??= new CompressedBody(JSON.stringify(app.swagger()));
    return document.send(request, reply.type('application/json; charset=utf-8'));
  });
  registerDocs(app);
}
