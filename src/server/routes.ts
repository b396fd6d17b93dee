import type { FastifyInstance } from 'fastify';
import { accountRoutes } from '../account/routes.js';
import { apiKeyRoutes } from '../api-keys/routes.js';
import type { AppContext } from './context.js';
import { dashboardRoutes } from '../account/sign-in.js';
import { EVENT_SCHEMAS } from '../events/schemas.js';
import { eventRoutes } from '../events/routes.js';
import { eventStreamRoutes } from '../events/stream/routes.js';
import { WORKSPACE_MOUNTS } from '../http/mount.js';
import { PushDevice, pushDeviceRoutes } from '../notifications/push/routes.js';
import { notificationRoutes } from '../notifications/routes.js';
import { Order, OrderLineItem } from '../orders/schemas.js';
import { orderRoutes } from '../orders/routes.js';
import { Product } from '../products/schemas.js';
import { productRoutes } from '../products/routes.js';
import { DeliveryAttempt, EndpointStats } from '../webhooks/attempts/schemas.js';
import { WebhookDelivery } from '../webhooks/deliveries/schemas.js';
import { webhookDeliveryRoutes } from '../webhooks/deliveries/routes.js';
import { WebhookEndpoint } from '../webhooks/endpoints/schemas.js';
import { webhookEndpointRoutes } from '../webhooks/endpoints/routes.js';
import { webhookRecoveryRoutes } from '../webhooks/recoveries/routes.js';
import { WebhookRecovery } from '../webhooks/recoveries/schemas.js';

/** Every route of the API. Workspace resources are mounted at /v1 and /v1/workspaces/{workspaceId}. */
export async function registerRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.addSchema(Product);
  app.addSchema(OrderLineItem);
  app.addSchema(Order);
  for (const schema of EVENT_SCHEMAS) app.addSchema(schema);
  app.addSchema(EndpointStats);
  app.addSchema(WebhookEndpoint);
  app.addSchema(WebhookDelivery);
  app.addSchema(DeliveryAttempt);
  app.addSchema(WebhookRecovery);
  app.addSchema(PushDevice);

  // Bulk recoveries stop between two batches once requests have finished; a later start resumes them.
  app.addHook('onClose', async () => ctx.recoveries.stop());
  // Pushes in flight are cut short and retries dropped; the notifications stay listed.
  app.addHook('onClose', async () => ctx.push.stop());

  // Open event streams end when the server begins to stop, so that it does not wait on them.
  app.addHook('preClose', (done) => {
    ctx.eventStreams.closeAll();
    done();
  });

  await app.register(
    async (scope) => {
      accountRoutes(scope, ctx);
      notificationRoutes(scope, ctx);
      pushDeviceRoutes(scope, ctx);
      dashboardRoutes(scope, ctx);
    },
    { prefix: '/v1' },
  );

  for (const mount of WORKSPACE_MOUNTS) {
    await app.register(
      async (scope) => {
        productRoutes(scope, ctx, mount);
        orderRoutes(scope, ctx, mount);
        eventRoutes(scope, ctx, mount);
        eventStreamRoutes(scope, ctx, mount);
        webhookEndpointRoutes(scope, ctx, mount);
        webhookDeliveryRoutes(scope, ctx, mount);
        webhookRecoveryRoutes(scope, ctx, mount);
        if (mount.inPath) apiKeyRoutes(scope, ctx, mount);
      },
      { prefix: mount.prefix },
    );
  }
}
