import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { applyConventions } from './conventions.js';
import { registerDocs } from './docs.js';
import { swaggerOptions } from './document.js';

/**
 * The OpenAPI document (`/openapi.json`, built by @fastify/swagger from the route schemas) and its
 * rendered reference (`/docs`). Register before the routes: each route gets its shared conventions
 * as it is added.
 */
export async function registerOpenApi(app: FastifyInstance, ctx: AppContext): Promise<void> {
  await app.register(swagger, swaggerOptions(ctx.config.publicUrl));
  app.addHook('onRoute', (route) => applyConventions(route));
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  registerDocs(app);
}
