import type { FastifyInstance } from 'fastify';
import { perRoute } from '../route-hooks.js';
import { authenticationHook, authorizationHook, type AuthDeps } from './authenticate.js';

export { authenticate, resolveWorkspace, type AuthDeps } from './authenticate.js';

/**
 * Authentication: every route under /v1/ that takes a credential, and every path under /v1/ that
 * matches no route (so that its 404 tells a caller without a valid credential nothing), gets an
 * `onRequest` hook that sets `request.principal` or answers 401.
 */
export function registerAuthentication(app: FastifyInstance, deps: AuthDeps): void {
  app.decorateRequest('principal', null);
  app.decorateRequest('workspace', null);
  const hook = authenticationHook(deps);
  perRoute(app, 'onRequest', (auth) => (auth?.scope === 'none' ? null : hook), hook);
}

/**
 * Authorization: a route's `auth` (scope and permission) is checked, and its workspace bound, in
 * `preValidation`, before the body is validated, so that a caller without rights learns nothing
 * from a 400.
 */
export function registerAuthorization(app: FastifyInstance, deps: AuthDeps): void {
  perRoute(app, 'preValidation', (auth) => (auth && auth.scope !== 'none' ? authorizationHook(deps, auth) : null));
}
