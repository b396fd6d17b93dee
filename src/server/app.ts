import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import { registerAuthentication, registerAuthorization } from '../http/auth/plugin.js';
import type { AppContext } from './context.js';
import { registerDashboard } from './dashboard.js';
import { clientErrorHandler, frameworkErrors, registerErrorHandler } from '../http/error-handler.js';
import { ApiError, ErrorBody } from '../http/errors.js';
import { registerJsonParser } from '../http/json-body.js';
import { registerIdempotency } from '../http/idempotency/plugin.js';
import { lazySerializers } from '../http/serialization.js';
import { settle } from '../http/settle.js';
import { refuseUndeclaredInput } from '../http/undeclared.js';
import { checkRequestUrl } from '../http/url.js';
import { compileValidator } from '../http/validation.js';
import { newId } from '../lib/ids.js';
import { registerOpenApi } from './openapi/plugin.js';
import { registerHttpMetrics } from './http-metrics.js';
import { registerOpsRoutes } from './ops-routes.js';
import { registerAddressGuard, registerCredentialLimits } from '../http/ratelimit/plugin.js';
import { tracing } from '../lib/trace.js';
import { registerRoutes } from './routes.js';
import { logOutages } from './outages.js';

export type App = FastifyInstance;

export interface AppOptions {
  logger?: FastifyServerOptions['logger'];
}

/** Builds the HTTP API around a context; the caller listens, or tests call `inject`. */
export async function buildApp(ctx: AppContext, options: AppOptions = {}): Promise<App> {
  const { trustProxy } = ctx.config;
  const app: App = Fastify({
    logger: options.logger ?? false,
    bodyLimit: ctx.config.bodyLimitBytes,
    genReqId: () => newId('req'),
    requestIdHeader: false,
    ajv: undefined,
    schemaController: { compilersFactory: { buildSerializer: lazySerializers } },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    // Requests arriving while the server closes get the error envelope (below), not Fastify's own 503.
    return503OnClosing: false,
    // Requests refused by the router or by Node's parser get the error envelope too.
    frameworkErrors: (error, request, reply) => frameworkErrors(error, request as FastifyRequest, reply as FastifyReply),
    clientErrorHandler: (error, socket) => clientErrorHandler(app.log, error, socket),
    // Who the client is, for per-address limits, when the service runs behind proxies (SVC_TRUST_PROXY).
    trustProxy: typeof trustProxy === 'number' ? (_address: string, hop: number) => hop < trustProxy : trustProxy,
  }).withTypeProvider<TypeBoxTypeProvider>();

  // First of all hooks, so that every later one runs inside the request's span (when tracing is on).
  tracing()?.requests(app);

  app.setValidatorCompiler(compileValidator);
  registerJsonParser(app);
  // The embedded server's folder (no DATABASE_URL) is named when its disk is full.
  registerErrorHandler(app, { dataDir: ctx.config.databaseUrl === null ? ctx.config.dataDir : null });
  logOutages(ctx.db, (fields, line) => app.log.warn(fields, line));
  app.addSchema(ErrorBody);

  // A graceful stop lets the requests in progress finish; one that arrives meanwhile on an open
  // connection is told to go elsewhere. Every answer given while closing ends its connection: one
  // whose request was in progress at the stop would otherwise stay open for the keep-alive
  // time-out (72 s), and the server waits for it before it can close.
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onSend', (_request, reply, _payload, done) => {
    if (closing) reply.header('Connection', 'close');
    done();
  });
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('Request-Id', request.id);
    if (closing) {
      reply.header('Connection', 'close');
      return done(new ApiError('UNAVAILABLE', 'The service is shutting down; retry the request.'));
    }
    settle(() => checkRequestUrl(request.url), done);
  });

  await registerOpenApi(app, { publicUrl: ctx.config.publicUrl });

  registerHttpMetrics(app, ctx.metrics);
  // The request hooks of every route under /v1/, in this order (docs/architecture.md): the address
  // guard, authentication, the credential's rate limit; then, before the body is validated,
  // authorization and the workspace binding; idempotency keys last, once the caller is known.
  registerAddressGuard(app, ctx);
  registerAuthentication(app, ctx);
  registerCredentialLimits(app, ctx);
  registerAuthorization(app, ctx);
  refuseUndeclaredInput(app);
  registerIdempotency(app, ctx);
  const unfollow = await ctx.credentials.follow(ctx.db);
  app.addHook('onClose', async () => unfollow());
  // Every process that writes events positions them in the log (engine/log/sequencer.ts).
  await ctx.sequencer.start();
  app.addHook('onClose', async () => ctx.sequencer.stop());
  await registerRoutes(app, ctx);

  registerOpsRoutes(app, ctx, { redis: true });
  registerDashboard(app);
  return app;
}
