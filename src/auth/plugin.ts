import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { ApiError, forbidden, validation } from '../http/errors.js';
import { isId } from '../lib/ids.js';
import { countFailure, guardAddress, limitCredential, watchRateLimitStore } from '../ratelimit/hooks.js';
import { hashToken, parseToken } from '../lib/tokens.js';
import { API_KEY_PERMISSIONS, WORKSPACE_ROLE_PERMISSIONS, resolveWorkspaceRole } from './permissions.js';
import type { Principal, WorkspaceScope } from './principal.js';
import { findCredential, findMembership } from './store.js';

const unauthenticated = (message: string) => new ApiError('UNAUTHENTICATED', message);

/**
 * Reads `Authorization: Bearer <token>`. A token found in the credential cache passed every check
 * when it was cached; any other has its format and checksum checked before the database is asked.
 */
export async function authenticate(request: FastifyRequest, ctx: AppContext): Promise<Principal> {
  const header = request.headers.authorization;
  if (!header) throw unauthenticated('Missing credential: send Authorization: Bearer <API key or personal access token>.');
  const match = /^Bearer ([^\s]+)$/i.exec(header);
  if (!match) throw unauthenticated('Malformed Authorization header: expected "Bearer <token>".');
  const hash = hashToken(match[1]);
  const now = ctx.clock.now();
  const cached = ctx.credentials.get(hash, now);
  if (cached) return cached;
  const parsed = parseToken(match[1]);
  if (!parsed) throw unauthenticated('Invalid credential: not a well-formed API key or personal access token.');
  const found = await findCredential(ctx.db, parsed.kind, hash, now);
  if (!found) throw unauthenticated('Invalid credential: unknown, revoked or expired.');
  ctx.credentials.set(hash, found.principal, found.expiresAt);
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

/** Binds a workspace-scoped request to its workspace: from the path, the header, or the API key. */
export async function resolveWorkspace(request: FastifyRequest, principal: Principal, ctx: AppContext): Promise<WorkspaceScope> {
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
  const membership = isId('wsp', wanted) ? await findMembership(ctx.db, principal.userId, wanted) : null;
  const resolved = membership && resolveWorkspaceRole(membership.workspace_role, membership.org_role);
  if (!resolved) throw forbidden(`You are not a member of workspace "${wanted}".`);
  return { id: wanted, role: resolved.role, permissions: WORKSPACE_ROLE_PERMISSIONS[resolved.role] };
}

export function registerAuth(app: FastifyInstance, ctx: AppContext): void {
  app.decorateRequest('principal', null);
  app.decorateRequest('workspace', null);

  // Rate limits run right after authentication: failures per client address, requests per credential.
  watchRateLimitStore(app, ctx);
  app.addHook('onRequest', async (request, reply) => {
    // The matched route decides, not the raw URL: the router decodes `/%761/products` to /v1/products.
    if (!(request.routeOptions.url ?? request.url).startsWith('/v1/')) return;
    await guardAddress(ctx, request, reply);
    try {
      request.principal = await authenticate(request, ctx);
    } catch (error) {
      if (error instanceof ApiError && error.code === 'UNAUTHENTICATED') await countFailure(ctx, request, reply);
      throw error;
    }
    await limitCredential(ctx, reply, request.principal);
  });

  // Authorization runs before body validation, so a caller without rights learns nothing from a 400.
  app.addHook('preValidation', async (request) => {
    const auth = request.routeOptions.config?.auth;
    const principal = request.principal;
    if (!auth) return;
    // Fail closed: a route that declares auth never runs without an authenticated caller.
    if (!principal) throw unauthenticated('Missing credential: send Authorization: Bearer <API key or personal access token>.');
    if (auth.scope === 'user' && principal.kind !== 'pat') {
      throw forbidden('This operation needs a personal access token.');
    }
    if (auth.scope !== 'workspace') return;
    const workspace = await resolveWorkspace(request, principal, ctx);
    if (auth.permission && !workspace.permissions.includes(auth.permission)) {
      throw forbidden(`This operation needs the permission ${auth.permission}, which your role in this workspace lacks.`);
    }
    request.workspace = workspace;
  });
}
