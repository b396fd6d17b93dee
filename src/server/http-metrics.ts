import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { withHook } from '../http/route-hooks.js';
import type { Metrics } from '../ops/metrics.js';

type Hook = (request: FastifyRequest, reply: FastifyReply, done: () => void) => void;

/** The `route` label of requests that matched no route: never the raw URL, which any client chooses. */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * Times every response into `svc_http_request_duration_seconds` by method, route template and
 * status. Each route gets its own onResponse hook as it is added, holding its template and its
 * histogram children, so a response costs one observation: nothing reads the route's options (a
 * new object on every read) or builds a label set. Requests that matched no route are counted
 * under UNMATCHED_ROUTE by one global hook. Call before any route is added.
 */
export function registerHttpMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const recorders = new Map(methods.map((m) => [m, metrics.route(m, route.url)]));
    const [only] = recorders.values();
    const hook: Hook = (request, reply, done) => {
      (recorders.size === 1 ? only : recorders.get(request.method)!)(reply.statusCode, reply.elapsedTime / 1000);
      done();
    };
    route.onResponse = withHook(route.onResponse as Hook | Hook[] | undefined, hook) as typeof route.onResponse;
  });

  const unmatched = new Map<string, ReturnType<Metrics['route']>>();
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) {
      let record = unmatched.get(request.method);
      if (!record) {
        record = metrics.route(request.method, UNMATCHED_ROUTE);
        unmatched.set(request.method, record);
      }
      record(reply.statusCode, reply.elapsedTime / 1000);
    }
    done();
  });
}
