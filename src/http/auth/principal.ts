import type { WorkspacePermission, WorkspaceRole } from '../../lib/permissions.js';

/** Who is calling: resolved once per request from the bearer credential. */
export type Principal =
  | { kind: 'api_key'; credentialId: string; workspaceId: string; test: boolean; rateLimit: number | null }
  | { kind: 'pat'; credentialId: string; userId: string; test: boolean; rateLimit: number | null };

/** The workspace a workspace-scoped request acts on, with the caller's permissions there. */
export interface WorkspaceScope {
  id: string;
  role: WorkspaceRole | 'api_key';
  permissions: readonly WorkspacePermission[];
}

export interface RouteAuth {
  /**
   * `workspace`: needs a bound workspace and `permission` there. `user`: needs a PAT. `any`: any
   * credential. `none`: no credential (the route checks what it is given, such as a sign-in code);
   * the failed-authentication guard of the client address still applies.
   */
  scope: 'workspace' | 'user' | 'any' | 'none';
  permission?: WorkspacePermission;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
    workspace: WorkspaceScope | null;
  }
  interface FastifyContextConfig {
    auth?: RouteAuth;
  }
}
