import { ORG_ROLE_PERMISSIONS, WORKSPACE_ROLE_PERMISSIONS, API_KEY_PERMISSIONS, resolveWorkspaceRole, type OrgRole, type WorkspaceRole } from '../lib/permissions.js';
import type { Principal } from '../http/auth/principal.js';
import type { Queryable } from '../db/db.js';

export interface WorkspaceSummary {
  id: string;
  organizationId: string;
  slug: string;
  name: string;
  image: string | null;
  role: WorkspaceRole | 'api_key';
  implicit: boolean;
  permissions: string[];
}

export interface OrganizationView {
  id: string;
  slug: string;
  name: string;
  logo: string | null;
  role: OrgRole | 'api_key';
  permissions: string[];
  workspaces?: Omit<WorkspaceSummary, 'organizationId'>[];
}

interface WorkspaceRow {
  id: string;
  organization_id: string;
  slug: string;
  name: string;
  image: string | null;
  workspace_role: WorkspaceRole | null;
  org_role: OrgRole | null;
}

/** Every workspace the caller can act in: explicit memberships and those implied by an organization role. */
export async function listWorkspaces(q: Queryable, principal: Principal): Promise<WorkspaceSummary[]> {
  if (principal.kind === 'api_key') {
    const rows = await q.query<WorkspaceRow>('SELECT id, organization_id, slug, name, image FROM workspaces WHERE id = $1', [principal.workspaceId]);
    return rows.map((w) => ({ ...summary(w), role: 'api_key', implicit: false, permissions: [...API_KEY_PERMISSIONS] }));
  }
  const rows = await q.query<WorkspaceRow>(
    `SELECT w.id, w.organization_id, w.slug, w.name, w.image, wm.role AS workspace_role, om.role AS org_role
       FROM workspaces w
       LEFT JOIN workspace_members wm ON wm.workspace_id = w.id AND wm.user_id = $1
       LEFT JOIN organization_members om ON om.organization_id = w.organization_id AND om.user_id = $1
      WHERE wm.user_id IS NOT NULL OR om.role IN ('owner', 'admin')
      ORDER BY w.created_at, w.id`,
    [principal.userId],
  );
  return rows.flatMap((w) => {
    const resolved = resolveWorkspaceRole(w.workspace_role, w.org_role);
    return resolved ? [{ ...summary(w), ...resolved, permissions: [...WORKSPACE_ROLE_PERMISSIONS[resolved.role]] }] : [];
  });
}

function summary(w: WorkspaceRow) {
  return { id: w.id, organizationId: w.organization_id, slug: w.slug, name: w.name, image: w.image };
}

interface OrgRow {
  id: string;
  slug: string;
  name: string;
  logo: string | null;
  role: OrgRole | null;
}

/** Organizations the caller belongs to, directly or through one of its workspaces. */
export async function listOrganizations(q: Queryable, principal: Principal): Promise<OrganizationView[]> {
  if (principal.kind === 'api_key') {
    const rows = await q.query<OrgRow>(
      'SELECT o.id, o.slug, o.name, o.logo FROM organizations o JOIN workspaces w ON w.organization_id = o.id WHERE w.id = $1',
      [principal.workspaceId],
    );
    return rows.map((o) => ({ id: o.id, slug: o.slug, name: o.name, logo: o.logo, role: 'api_key', permissions: ['org:read'] }));
  }
  const rows = await q.query<OrgRow>(
    `SELECT o.id, o.slug, o.name, o.logo, om.role
       FROM organizations o
       LEFT JOIN organization_members om ON om.organization_id = o.id AND om.user_id = $1
      WHERE om.user_id IS NOT NULL
         OR EXISTS (SELECT 1 FROM workspace_members wm JOIN workspaces w ON w.id = wm.workspace_id
                     WHERE w.organization_id = o.id AND wm.user_id = $1)
      ORDER BY o.created_at, o.id`,
    [principal.userId],
  );
  return rows.map((o) => {
    const role = o.role ?? 'member';
    return { id: o.id, slug: o.slug, name: o.name, logo: o.logo, role, permissions: [...ORG_ROLE_PERMISSIONS[role]] };
  });
}

export interface UserRow {
  id: string;
  email: string;
  name: string;
  created_at: Date;
}

export async function findUser(q: Queryable, id: string): Promise<UserRow | null> {
  const [row] = await q.query<UserRow>('SELECT id, email, name, created_at FROM users WHERE id = $1', [id]);
  return row ?? null;
}
