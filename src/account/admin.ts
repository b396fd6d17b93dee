import { REVOCATION_CHANNEL } from '../http/auth/cache.js';
import type { OrgRole, WorkspaceRole } from '../lib/permissions.js';
import { channelSql } from '../db/channels.js';
import type { Queryable } from '../db/db.js';
import { newId } from '../lib/ids.js';
import { toIso } from '../lib/iso.js';
import { displayPrefix, hashToken, newToken } from '../lib/tokens.js';

/** Bootstrapping operations behind `svc admin` and `svc demo` (there is no sign-up over HTTP). */

export async function createUser(q: Queryable, input: { email: string; name: string }, now: Date) {
  const id = newId('usr', now);
  await q.query('INSERT INTO users (id, email, name, created_at) VALUES ($1, $2, $3, $4)', [id, input.email, input.name, now]);
  return { id, email: input.email, name: input.name };
}

export async function createOrganization(q: Queryable, input: { slug: string; name: string; logo?: string | null }, now: Date) {
  const id = newId('org', now);
  await q.query('INSERT INTO organizations (id, slug, name, logo, created_at) VALUES ($1, $2, $3, $4, $5)', [id, input.slug, input.name, input.logo ?? null, now]);
  return { id, slug: input.slug, name: input.name };
}

export async function createWorkspace(q: Queryable, input: { organizationId: string; slug: string; name: string; image?: string | null }, now: Date) {
  const id = newId('wsp', now);
  await q.query('INSERT INTO workspaces (id, organization_id, slug, name, image, created_at) VALUES ($1, $2, $3, $4, $5, $6)', [
    id,
    input.organizationId,
    input.slug,
    input.name,
    input.image ?? null,
    now,
  ]);
  return { id, organizationId: input.organizationId, slug: input.slug, name: input.name };
}

export async function addOrganizationMember(q: Queryable, input: { organizationId: string; userId: string; role: OrgRole }, now: Date) {
  await q.query(
    `INSERT INTO organization_members (organization_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (organization_id, user_id) DO UPDATE SET role = EXCLUDED.role`,
    [input.organizationId, input.userId, input.role, now],
  );
}

export async function addWorkspaceMember(q: Queryable, input: { workspaceId: string; userId: string; role: WorkspaceRole }, now: Date) {
  await q.query(
    `INSERT INTO workspace_members (workspace_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = EXCLUDED.role`,
    [input.workspaceId, input.userId, input.role, now],
  );
}

/** Issues a personal access token; only its SHA-256 is stored, the token is returned this once. */
export async function createPersonalAccessToken(
  q: Queryable,
  input: { userId: string; name: string; test: boolean; rateLimit?: number | null; expiresAt?: Date | null },
  now: Date,
) {
  const token = newToken('pat', input.test);
  const id = newId('pat', now);
  await q.query(
    `INSERT INTO personal_access_tokens (id, user_id, name, prefix, token_hash, test, rate_limit, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [id, input.userId, input.name, displayPrefix(token), hashToken(token), input.test, input.rateLimit ?? null, now, input.expiresAt ?? null],
  );
  return { id, token, prefix: displayPrefix(token) };
}

export async function revokePersonalAccessToken(q: Queryable, id: string, now: Date): Promise<boolean> {
  const rows = await q.query(
    `WITH revoked AS (UPDATE personal_access_tokens SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1 RETURNING id)
     SELECT pg_notify(${channelSql(REVOCATION_CHANNEL)}, id)::text FROM revoked`,
    [id, now],
  );
  return rows.length === 1;
}

/**
 * Whole lists for `svc admin list-*`, oldest first: a command-line view of a self-hosted
 * installation, where these sets are small (the API pages them per caller instead).
 */
export async function listAllUsers(q: Queryable) {
  const rows = await q.query<{ id: string; email: string; name: string; created_at: Date }>('SELECT id, email, name, created_at FROM users ORDER BY created_at, id');
  return rows.map((r) => ({ id: r.id, email: r.email, name: r.name, createdAt: toIso(r.created_at) }));
}

export async function listAllOrganizations(q: Queryable) {
  const rows = await q.query<{ id: string; slug: string; name: string; created_at: Date }>('SELECT id, slug, name, created_at FROM organizations ORDER BY created_at, id');
  return rows.map((r) => ({ id: r.id, slug: r.slug, name: r.name, createdAt: toIso(r.created_at) }));
}

export async function listAllWorkspaces(q: Queryable, organizationId: string | null) {
  const rows = await q.query<{ id: string; organization_id: string; slug: string; name: string; created_at: Date }>(
    `SELECT id, organization_id, slug, name, created_at FROM workspaces
      WHERE $1::text IS NULL OR organization_id = $1 ORDER BY created_at, id`,
    [organizationId],
  );
  return rows.map((r) => ({ id: r.id, organizationId: r.organization_id, slug: r.slug, name: r.name, createdAt: toIso(r.created_at) }));
}

/** Whether a row with this id exists in `table` (one of the bootstrapping tables, never user input). */
export async function exists(q: Queryable, table: 'users' | 'organizations' | 'workspaces', id: string): Promise<boolean> {
  const rows = await q.query(`SELECT 1 FROM ${table} WHERE id = $1`, [id]);
  return rows.length > 0;
}
