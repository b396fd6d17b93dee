import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RouteAuth } from './auth/principal.js';

export type Hook = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void;

/**
 * A route's hooks of one kind with `hook` added last. Hooks attached to each route as it is added
 * (an `onRoute` hook) hold what they need of the route, instead of reading the route's options on
 * every request (request.routeOptions builds a new object on each read).
 */
export function withHook<T>(hooks: T | T[] | undefined, hook: T): T[] {
  return hooks === undefined ? [hook] : [...(Array.isArray(hooks) ? hooks : [hooks]), hook];
}

/**
 * Adds a hook of `phase` to every route under /v1/ for which `pick`, given the route's `auth`,
 * returns one; with `unmatched`, that hook also runs for a path under /v1/ that matches no route.
 * The matched route decides, not the raw URL: the router decodes `/%761/products` to /v1/products.
 * Hooks run in the order their `perRoute` calls were made (server/app.ts sets it).
 */
export function perRoute(app: FastifyInstance, phase: 'onRequest' | 'preValidation', pick: (auth: RouteAuth | undefined) => Hook | null, unmatched?: Hook): void {
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/v1/')) return;
    const hook = pick(route.config?.auth);
    if (hook) route[phase] = withHook(route[phase] as Hook | Hook[] | undefined, hook) as typeof route.onRequest;
  });
  if (unmatched) {
    app.addHook('onRequest', (request, reply, done) => (request.is404 && request.url.startsWith('/v1/') ? unmatched(request, reply, done) : done()));
  }
}
