import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../lib/config.js';
import { ApiError } from '../http/errors.js';
import { safeEqual } from '../lib/secretbox.js';
import { readiness, type ReadinessScope, type ReadinessDeps } from './health.js';
import type { Metrics } from '../ops/metrics.js';

/** What the operational routes use of the service. */
export type OpsDeps = ReadinessDeps & { config: Pick<Config, 'metricsToken'>; metrics: Pick<Metrics, 'text' | 'contentType'> };

/** The operational routes, outside /v1: the OpenAPI document leaves them out, as it does itself. */
export const OPS_PATHS = ['/healthz', '/readyz', '/metrics'];

/**
 * Load balancers and scrapers call these every few seconds: their requests are logged only at
 * warn and above, so they do not bury the API's own lines. Being outside /v1, they pass no
 * credential check and no rate limit (http/auth/plugin.ts attaches those to /v1 routes only).
 */
const routeOptions = { logLevel: 'warn' as const, schema: { hide: true } };

function checkMetricsToken(request: FastifyRequest, token: string): void {
  const header = request.headers.authorization ?? '';
  const given = /^Bearer (\S+)$/i.exec(header)?.[1] ?? '';
  if (!safeEqual(given, token)) throw new ApiError('UNAUTHENTICATED', 'GET /metrics needs Authorization: Bearer <SVC_METRICS_TOKEN>.');
}

/**
 * GET /healthz: the process answers. GET /readyz: it should get traffic (health.ts); 503 with the
 * error envelope naming each failed check otherwise. GET /metrics: Prometheus text, behind
 * SVC_METRICS_TOKEN when it is set.
 */
export function registerOpsRoutes(app: FastifyInstance, ctx: OpsDeps, scope: ReadinessScope): void {
  app.get('/healthz', routeOptions, async () => ({ status: 'ok' }));

  app.get('/readyz', routeOptions, async (request, reply) => {
    const result = await readiness(ctx, scope);
    if (result.ready) return { status: 'ready', checks: result.checks };
    // Sent rather than thrown: a failing probe is an expected answer, not a fault to log as an error.
    const message = `Not ready: ${result.failed.map((f) => `${f.path}: ${f.message}`).join('; ')}.`;
    return reply.status(503).send({ error: { code: 'UNAVAILABLE', message, requestId: request.id, details: result.failed } });
  });

  app.get('/metrics', routeOptions, async (request, reply) => {
    if (ctx.config.metricsToken !== null) checkMetricsToken(request, ctx.config.metricsToken);
    const text = await ctx.metrics.text();
    return reply.type(ctx.metrics.contentType).send(text);
  });
}
