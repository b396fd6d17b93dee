/**
 * Roles resolve to permission sets; routes check permissions, never role names (docs/api.md#roles-and-permissions).
 * Owner and Admin hold every workspace permission, Viewer every `:read` one.
 */
export const WORKSPACE_PERMISSIONS = [
  'workspace:products:read',
  'workspace:products:write',
  'workspace:orders:read',
  'workspace:orders:write',
  'workspace:events:read',
  'workspace:developer:read',
  'workspace:developer:write',
  'workspace:api_keys:manage',
] as const;

export const ORG_PERMISSIONS = ['org:read', 'org:members:read', 'org:members:write', 'org:workspaces:write'] as const;

export type WorkspacePermission = (typeof WORKSPACE_PERMISSIONS)[number];
export type OrgPermission = (typeof ORG_PERMISSIONS)[number];
export type WorkspaceRole = 'owner' | 'admin' | 'viewer';
export type OrgRole = 'owner' | 'admin' | 'member';

const READ_ONLY = WORKSPACE_PERMISSIONS.filter((p) => p.endsWith(':read'));

export const WORKSPACE_ROLE_PERMISSIONS: Record<WorkspaceRole, readonly WorkspacePermission[]> = {
  owner: WORKSPACE_PERMISSIONS,
  admin: WORKSPACE_PERMISSIONS,
  viewer: READ_ONLY,
};

/** An API key reads and writes its workspace's resources but cannot manage credentials. */
export const API_KEY_PERMISSIONS: readonly WorkspacePermission[] = WORKSPACE_PERMISSIONS.filter(
  (p) => p !== 'workspace:api_keys:manage',
);

export const ORG_ROLE_PERMISSIONS: Record<OrgRole, readonly OrgPermission[]> = {
  owner: ORG_PERMISSIONS,
  admin: ['org:read', 'org:members:read', 'org:members:write', 'org:workspaces:write'],
  member: ['org:read'],
};

const RANK: Record<WorkspaceRole, number> = { viewer: 1, admin: 2, owner: 3 };

export interface ResolvedRole {
  role: WorkspaceRole;
  implicit: boolean;
}

/**
 * A user's role in a workspace: the explicit membership, or the one implied by being owner or admin
 * of its organization, whichever is higher. Null when the user has neither.
 */
export function resolveWorkspaceRole(explicit: WorkspaceRole | null, orgRole: OrgRole | null): ResolvedRole | null {
  const implied: WorkspaceRole | null = orgRole === 'owner' || orgRole === 'admin' ? orgRole : null;
  if (explicit && (!implied || RANK[explicit] >= RANK[implied])) return { role: explicit, implicit: false };
  if (implied) return { role: implied, implicit: true };
  return null;
}
