import type { FastifyRequest } from 'fastify';
import type { Db } from '../../db/db.js';
import { ApiError, forbidden, validation } from '../errors.js';
import type { Hook } from '../route-hooks.js';
import { settle } from '../settle.js';
import type { Clock } from '../../lib/clock.js';
import { isId } from '../../lib/ids.js';
import { hashToken, parseToken } from '../../lib/tokens.js';
import type { CredentialCache } from './cache.js';
import { API_KEY_PERMISSIONS, WORKSPACE_ROLE_PERMISSIONS, resolveWorkspaceRole } from '../../lib/permissions.js';
import type { Principal, RouteAuth, WorkspaceScope } from './principal.js';
import { findCredential, findMembership } from './store.js';

/** What authentication and the workspace binding use. */
export interface AuthDeps {
  db: Db;
  clock: Clock;
  /** Valid credentials by token hash; revocations reach it through NOTIFY (cache.ts). */
  credentials: CredentialCache;
}

export const unauthenticated = (message: string) => new ApiError('UNAUTHENTICATED', message);

export const MISSING_CREDENTIAL = 'Missing credential: send Authorization: Bearer <API key or personal access token>.';

/** The token of `Authorization: Bearer <token>`; 401 when the header is missing or malformed. */
function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (!header) throw unauthenticated(MISSING_CREDENTIAL);
  const match = /^Bearer ([^\s]+)$/i.exec(header);
  if (!match) throw unauthenticated('Malformed Authorization header: expected "Bearer <token>".');
  return match[1];
}

/** The request's principal if its credential is cached (it passed every check when it was cached). */
export function cachedPrincipal(request: FastifyRequest, deps: AuthDeps): Principal | null {
  return deps.credentials.get(hashToken(bearerToken(request)), deps.clock.now());
}

/**
 * Reads `Authorization: Bearer <token>`. A token found in the credential cache passed every check
 * when it was cached; any other has its format and checksum checked before the database is asked.
 */
export async function authenticate(request: FastifyRequest, deps: AuthDeps): Promise<Principal> {
  const token = bearerToken(request);
  const hash = hashToken(token);
  const now = deps.clock.now();
  const cached = deps.credentials.get(hash, now);
  if (cached) return cached;
  const parsed = parseToken(token);
  if (!parsed) throw unauthenticated('Invalid credential: not a well-formed API key or personal access token.');
  const generation = deps.credentials.generation;
  const found = await findCredential(deps.db, parsed.kind, hash, now);
  if (!found) throw unauthenticated('Invalid credential: unknown, revoked or expired.');
  deps.credentials.set(hash, found.principal, found.expiresAt, generation);
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
export function resolveWorkspace(request: FastifyRequest, principal: Principal, deps: AuthDeps): WorkspaceScope | Promise<WorkspaceScope> {
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
  return memberScope(deps, principal.userId, wanted);
}

async function memberScope(deps: AuthDeps, userId: string, workspaceId: string): Promise<WorkspaceScope> {
  const membership = isId('wsp', workspaceId) ? await findMembership(deps.db, userId, workspaceId) : null;
  const resolved = membership && resolveWorkspaceRole(membership.workspace_role, membership.org_role);
  if (!resolved) throw forbidden(`You are not a member of workspace "${workspaceId}".`);
  return { id: workspaceId, role: resolved.role, permissions: WORKSPACE_ROLE_PERMISSIONS[resolved.role] };
}

/**
 * Sets `request.principal` from the bearer token. A cached credential (the common case) is found
 * without a promise; any other is looked up.
 */
export function authenticationHook(deps: AuthDeps): Hook {
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
export function authorizationHook(deps: AuthDeps, auth: RouteAuth): Hook {
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
