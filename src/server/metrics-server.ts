import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { registerErrorHandler } from '../http/error-handler.js';
import { newId } from '../lib/ids.js';
import { registerOpsRoutes, type OpsDeps } from './ops-routes.js';
import type { ReadinessScope } from './health.js';

/**
 * A listener with /healthz, /readyz and /metrics only, on HOST:SVC_METRICS_PORT: how `svc worker`,
 * which has no API, is probed and scraped (and, when the setting is given, a second port of
 * `svc serve` that can stay off the public network).
 */
export async function startOpsServer(
  ctx: OpsDeps,
  scope: ReadinessScope,
  options: { port: number; host: string; logger?: FastifyServerOptions['logger'] },
): Promise<FastifyInstance> {
  const app = Fastify({ logger: options.logger ?? false, genReqId: () => newId('req'), requestIdHeader: false });
  registerErrorHandler(app);
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('Request-Id', request.id);
    done();
  });
  registerOpsRoutes(app, ctx, scope);
  await app.listen({ port: options.port, host: options.host });
  return app;
}

/** The address a listener took (the port chosen by the system when 0 was asked for). */
export function boundPort(app: FastifyInstance): number {
  const address = app.server.address();
  return typeof address === 'object' && address ? address.port : 0;
}
