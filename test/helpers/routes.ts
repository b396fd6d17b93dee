import type { App } from '../../src/server/app.js';

export interface Route {
  method: string;
  path: string;
}

/**
 * Every route the app registered, read from Fastify's own route tree (`printRoutes`), e.g.
 * `{method: 'GET', path: '/v1/products/:productId'}`. HEAD routes, Fastify's automatic twins of GET
 * routes, are left out.
 */
export function registeredRoutes(app: App): Route[] {
  const routes: Route[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^((?:│ {3}| {4})*)[├└]── (\S+)(?: \(([^)]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1].length / 4;
    stack.length = depth;
    const parent = stack[depth - 1] ?? '';
    // With ignoreTrailingSlash the tree prints `/dashboard/*` as `/dashboard` and `*`.
    stack[depth] = parent + (match[2].startsWith('*') && !parent.endsWith('/') ? `/${match[2]}` : match[2]);
    for (const method of match[3]?.split(', ') ?? []) {
      if (method !== 'HEAD') routes.push({ method, path: stack[depth] });
    }
  }
  return routes;
}
