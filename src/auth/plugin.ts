import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { ApiError, forbidden, validation } from '../http/errors.js';
import { withHook } from '../http/route-hooks.js';
import { settle } from '../http/settle.js';
import { isId } from '../lib/ids.js';
import { countFailure, guardAddress, limitCredential, watchRateLimitStore } from '../ratelimit/hooks.js';
import { hashToken, parseToken } from '../lib/tokens.js';
import { API_KEY_PERMISSIONS, WORKSPACE_ROLE_PERMISSIONS, resolveWorkspaceRole } from './permissions.js';
import type { Principal, RouteAuth, WorkspaceScope } from './principal.js';
import { findCredential, findMembership } from './store.js';

const unauthenticated = (message: string) => new ApiError('UNAUTHENTICATED', message);

/** The token of `Authorization: Bearer <token>`; 401 when the header is missing or malformed. */
function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (!header) throw unauthenticated('Missing credential: send Authorization: Bearer <API key or personal access token>.');
  const match = /^Bearer ([^\s]+)$/i.exec(header);
  if (!match) throw unauthenticated('Malformed Authorization header: expected "Bearer <token>".');
  return match[1];
}

/** The request's principal if its credential is cached (it passed every check when it was cached). */
function cachedPrincipal(request: FastifyRequest, ctx: AppContext): Principal | null {
  return ctx.credentials.get(hashToken(bearerToken(request)), ctx.clock.now());
}

/**
 * Reads `Authorization: Bearer <token>`. A token found in the credential cache passed every check
 * when it was cached; any other has its format and checksum checked before the database is asked.
 */
export async function authenticate(request: FastifyRequest, ctx: AppContext): Promise<Principal> {
  const token = bearerToken(request);
  const hash = hashToken(token);
  const now = ctx.clock.now();
  const cached = ctx.credentials.get(hash, now);
  if (cached) return cached;
  const parsed = parseToken(token);
  if (!parsed) throw unauthenticated('Invalid credential: not a well-formed API key or personal access token.');
  const generation = ctx.credentials.generation;
  const found = await findCredential(ctx.db, parsed.kind, hash, now);
  if (!found) throw unauthenticated('Invalid credential: unknown, revoked or expired.');
  ctx.credentials.set(hash, found.principal, found.expiresAt, generation);
  return found.principal;
}

function requestedWorkspace(request: FastifyRequest): string | undefined {
  const fromPath = (request.params as { workspaceId?: string } | undefined)?.workspaceId;
  const fromHeader = request.headers['service-workspace-id'];
  if (Array.isArray(fromHeader)) throw validation('Service-Workspace-Id must be given once.');
  if (fromPath !== undefined && fromHeader !== undefined && fromPath !== fromHeader) {
    throw validation(`Service-Workspace-Id "${fromHeader}" does not match the workspace in the path "${fromPath}".`, [
      { path: 'header.service-workspace-id', message: 'does not match the path' },
    ]);
  }
  return fromPath ?? fromHeader;
}

/**
 * Binds a workspace-scoped request to its workspace: from the path, the header, or the API key. An
 * API key's is known at once; a personal access token's membership is looked up.
 */
export function resolveWorkspace(request: FastifyRequest, principal: Principal, ctx: AppContext): WorkspaceScope | Promise<WorkspaceScope> {
  const wanted = requestedWorkspace(request);
  if (principal.kind === 'api_key') {
    if (wanted !== undefined && wanted !== principal.workspaceId) {
      throw forbidden('This API key belongs to another workspace.');
    }
    return { id: principal.workspaceId, role: 'api_key', permissions: API_KEY_PERMISSIONS };
  }
  if (wanted === undefined) {
    throw validation('A personal access token needs a workspace: use /v1/workspaces/{workspaceId}/... or the Service-Workspace-Id header.', [
      { path: 'header.service-workspace-id', message: 'required with a personal access token' },
    ]);
  }
  return memberScope(ctx, principal.userId, wanted);
}

async function memberScope(ctx: AppContext, userId: string, workspaceId: string): Promise<WorkspaceScope> {
  const membership = isId('wsp', workspaceId) ? await findMembership(ctx.db, userId, workspaceId) : null;
  const resolved = membership && resolveWorkspaceRole(membership.workspace_role, membership.org_role);
  if (!resolved) throw forbidden(`You are not a member of workspace "${workspaceId}".`);
  return { id: workspaceId, role: resolved.role, permissions: WORKSPACE_ROLE_PERMISSIONS[resolved.role] };
}

/** A 401 counts against the client address; the error goes on either way. */
async function failedAuthentication(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, error: unknown): Promise<never> {
  if (error instanceof ApiError && error.code === 'UNAUTHENTICATED') await countFailure(ctx, request, reply);
  throw error;
}

/**
 * Authenticates the request and counts it against its credential. With the credential cached and
 * the counters in memory (the common case) nothing waits, and no promise is made.
 */
function identify(ctx: AppContext, request: FastifyRequest, reply: FastifyReply): void | Promise<void> {
  let principal: Principal | null;
  try {
    principal = cachedPrincipal(request, ctx);
  } catch (error) {
    return failedAuthentication(ctx, request, reply, error);
  }
  if (principal) {
    request.principal = principal;
    return limitCredential(ctx, reply, principal);
  }
  return authenticate(request, ctx).then((found) => {
    request.principal = found;
    return limitCredential(ctx, reply, found);
  }, (error) => failedAuthentication(ctx, request, reply, error));
}

type Hook = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void;

/** Authenticates the request, after the failed-authentication guard of its address. */
function authenticationHook(ctx: AppContext): Hook {
  return (request, reply, done) =>
    settle(() => {
      const guarded = guardAddress(ctx, request, reply);
      return guarded ? guarded.then(() => identify(ctx, request, reply)) : identify(ctx, request, reply);
    }, done);
}

/** For routes that take no credential: an address past its failed-authentication limit is refused all the same. */
function addressGuardHook(ctx: AppContext): Hook {
  return (request, reply, done) => settle(() => guardAddress(ctx, request, reply), done);
}

/** Checks what a route's `auth` asks of the authenticated caller and binds its workspace. */
function authorizationHook(ctx: AppContext, auth: RouteAuth): Hook {
  return (request, _reply, done) =>
    settle(() => {
      const principal = request.principal;
      // Fail closed: a route that declares auth never runs without an authenticated caller.
      if (!principal) throw unauthenticated('Missing credential: send Authorization: Bearer <API key or personal access token>.');
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
      const workspace = resolveWorkspace(request, principal, ctx);
      return workspace instanceof Promise ? workspace.then(bind) : bind(workspace);
    }, done);
}

export function registerAuth(app: FastifyInstance, ctx: AppContext): void {
  app.decorateRequest('principal', null);
  app.decorateRequest('workspace', null);
  watchRateLimitStore(app, ctx);
  const authenticate = authenticationHook(ctx);

  // Every route under /v1/ gets its hooks as it is added, with its own `auth` in hand, rather than
  // global hooks that look the route up on each request (request.routeOptions builds a new object
  // on every read). Rate limits run right after authentication: failures per client address,
  // requests per credential. Authorization runs before body validation, so a caller without rights
  // learns nothing from a 400. The matched route decides, not the raw URL: the router decodes
  // `/%761/products` to /v1/products.
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/v1/')) return;
    const auth = route.config?.auth;
    if (auth?.scope === 'none') {
      route.onRequest = withHook(route.onRequest as Hook | Hook[] | undefined, addressGuardHook(ctx)) as typeof route.onRequest;
      return;
    }
    route.onRequest = withHook(route.onRequest as Hook | Hook[] | undefined, authenticate) as typeof route.onRequest;
    if (auth) route.preValidation = withHook(route.preValidation as Hook | Hook[] | undefined, authorizationHook(ctx, auth)) as typeof route.preValidation;
  });

  // A path under /v1/ that matches no route is authenticated too, so its 404 tells a caller
  // without a valid credential nothing.
  app.addHook('onRequest', (request, reply, done) => (request.is404 && request.url.startsWith('/v1/') ? authenticate(request, reply, done) : done()));
}
