import type { FastifyInstance } from 'fastify';
import { accountRoutes } from './account/routes.js';
import { apiKeyRoutes } from './api-keys/routes.js';
import type { AppContext } from './context.js';
import { Event } from './events/schemas.js';
import { eventRoutes } from './events/routes.js';
import { WORKSPACE_MOUNTS } from './http/mount.js';
import { Product } from './products/schemas.js';
import { productRoutes } from './products/routes.js';

/** Every route of the API. Workspace resources are mounted at /v1 and /v1/workspaces/{workspaceId}. */
export async function registerRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.addSchema(Product);
  app.addSchema(Event);

  await app.register(async (scope) => accountRoutes(scope, ctx), { prefix: '/v1' });

  for (const mount of WORKSPACE_MOUNTS) {
    await app.register(
      async (scope) => {
        productRoutes(scope, ctx, mount);
        eventRoutes(scope, ctx, mount);
        if (mount.inPath) apiKeyRoutes(scope, ctx, mount);
      },
      { prefix: mount.prefix },
    );
  }
}
