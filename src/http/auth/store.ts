import type { Queryable } from '../../db/db.js';
import type { OrgRole, WorkspaceRole } from '../../lib/permissions.js';
import type { Principal } from './principal.js';

interface CredentialRow {
  id: string;
  owner_id: string;
  test: boolean;
  rate_limit: number | null;
  expires_at: Date | null;
  revoked_at: Date | null;
}

/** One indexed look-up by token hash; revoked and expired credentials are refused here. */
export async function findCredential(
  q: Queryable,
  kind: Principal['kind'],
  tokenHash: string,
  now: Date,
): Promise<{ principal: Principal; expiresAt: Date | null } | null> {
  const sql =
    kind === 'api_key'
      ? 'SELECT id, workspace_id AS owner_id, test, rate_limit, expires_at, revoked_at FROM api_keys WHERE token_hash = $1'
      : 'SELECT id, user_id AS owner_id, test, rate_limit, expires_at, revoked_at FROM personal_access_tokens WHERE token_hash = $1';
  const [row] = await q.query<CredentialRow>(sql, [tokenHash]);
  if (!row || row.revoked_at || (row.expires_at && row.expires_at <= now)) return null;
  const base = { credentialId: row.id, test: row.test, rateLimit: row.rate_limit };
  const principal: Principal = kind === 'api_key' ? { kind, workspaceId: row.owner_id, ...base } : { kind, userId: row.owner_id, ...base };
  return { principal, expiresAt: row.expires_at };
}

export interface MembershipRow {
  workspace_id: string;
  workspace_role: WorkspaceRole | null;
  org_role: OrgRole | null;
}

/** The user's explicit and organization roles for one workspace; null when the workspace does not exist. */
export async function findMembership(q: Queryable, userId: string, workspaceId: string): Promise<MembershipRow | null> {
  const [row] = await q.query<MembershipRow>(
    `SELECT w.id AS workspace_id, wm.role AS workspace_role, om.role AS org_role
       FROM workspaces w
       LEFT JOIN workspace_members wm ON wm.workspace_id = w.id AND wm.user_id = $2
       LEFT JOIN organization_members om ON om.organization_id = w.organization_id AND om.user_id = $2
      WHERE w.id = $1`,
    [workspaceId, userId],
  );
  return row ?? null;
}
