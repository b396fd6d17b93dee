import type { FastifyInstance } from 'fastify';
import { forbidden } from '../errors.js';
import { perRoute, type Hook } from '../route-hooks.js';
import { settle } from '../settle.js';
import { MISSING_CREDENTIAL, authenticate, cachedPrincipal, resolveWorkspace, unauthenticated, type AuthDeps } from './authenticate.js';
import type { RouteAuth, WorkspaceScope } from './principal.js';

export { authenticate, resolveWorkspace, type AuthDeps } from './authenticate.js';

/**
 * Sets `request.principal` from the bearer token. A cached credential (the common case) is found
 * without a promise; any other is looked up.
 */
function authenticationHook(deps: AuthDeps): Hook {
  return (request, _reply, done) =>
    settle(() => {
      const cached = cachedPrincipal(request, deps);
      if (cached) {
        request.principal = cached;
        return;
      }
      return authenticate(request, deps).then((found) => {
        request.principal = found;
      });
    }, done);
}

/** Checks what a route's `auth` asks of the authenticated caller and binds its workspace. */
function authorizationHook(deps: AuthDeps, auth: RouteAuth): Hook {
  return (request, _reply, done) =>
    settle(() => {
      const principal = request.principal;
      // Fail closed: a route that declares auth never runs without an authenticated caller.
      if (!principal) throw unauthenticated(MISSING_CREDENTIAL);
      if (auth.scope === 'user' && principal.kind !== 'pat') {
        throw forbidden('This operation needs a personal access token.');
      }
      if (auth.scope !== 'workspace') return;
      const bind = (workspace: WorkspaceScope) => {
        if (auth.permission && !workspace.permissions.includes(auth.permission)) {
          throw forbidden(`This operation needs the permission ${auth.permission}, which your role in this workspace lacks.`);
        }
        request.workspace = workspace;
      };
      const workspace = resolveWorkspace(request, principal, deps);
      return workspace instanceof Promise ? workspace.then(bind) : bind(workspace);
    }, done);
}

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
