import { REVOCATION_CHANNEL } from '../http/auth/cache.js';
import { channelSql } from '../db/channels.js';
import type { Queryable } from '../db/db.js';
import { Where } from '../db/where.js';
import { fetchPage, type Cursor, type Page } from '../db/keyset.js';
import { newId } from '../lib/ids.js';
import { toIso } from '../lib/iso.js';
import { displayPrefix, hashToken, newToken } from '../lib/tokens.js';

export interface ApiKeyRow {
  id: string;
  workspace_id: string;
  name: string;
  prefix: string;
  test: boolean;
  rate_limit: number | null;
  created_at: Date;
  revoked_at: Date | null;
}

export interface ApiKeyView {
  id: string;
  workspaceId: string;
  name: string;
  prefix: string;
  test: boolean;
  rateLimit: number | null;
  createdAt: string;
  revokedAt: string | null;
}

const COLUMNS = 'id, workspace_id, name, prefix, test, rate_limit, created_at, revoked_at';

export function toView(row: ApiKeyRow): ApiKeyView {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    prefix: row.prefix,
    test: row.test,
    rateLimit: row.rate_limit,
    createdAt: toIso(row.created_at),
    revokedAt: row.revoked_at ? toIso(row.revoked_at) : null,
  };
}

/** Issues a key: only its SHA-256 is stored; the token is returned this once. */
export async function createApiKey(
  q: Queryable,
  input: { workspaceId: string; name: string; test: boolean; rateLimit?: number | null },
  now: Date,
): Promise<{ row: ApiKeyRow; key: string }> {
  const key = newToken('api_key', input.test);
  const [row] = await q.query<ApiKeyRow>(
    `INSERT INTO api_keys (id, workspace_id, name, prefix, token_hash, test, rate_limit, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    [newId('key', now), input.workspaceId, input.name, displayPrefix(key), hashToken(key), input.test, input.rateLimit ?? null, now],
  );
  return { row, key };
}

export async function listApiKeys(q: Queryable, workspaceId: string, cursor: Cursor | null, limit: number): Promise<Page<ApiKeyRow>> {
  const where = new Where().add('workspace_id = $?', workspaceId);
  return fetchPage(q, { select: `SELECT ${COLUMNS} FROM api_keys`, where, cursor, limit });
}

/** Every key, or every key of one workspace, oldest first (`svc admin list-api-keys`). */
export async function listAllApiKeys(q: Queryable, workspaceId: string | null): Promise<ApiKeyView[]> {
  const rows = await q.query<ApiKeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE $1::text IS NULL OR workspace_id = $1 ORDER BY created_at, id`, [workspaceId]);
  return rows.map(toView);
}

/** Revocation is immediate: the NOTIFY at commit makes every process drop the key from its credential cache. */
export async function revokeApiKey(q: Queryable, workspaceId: string | null, id: string, now: Date): Promise<ApiKeyRow | null> {
  const [row] = await q.query<ApiKeyRow>(
    `WITH revoked AS (
       UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $3)
        WHERE id = $1 AND ($2::text IS NULL OR workspace_id = $2) RETURNING ${COLUMNS})
     SELECT revoked.*, pg_notify(${channelSql(REVOCATION_CHANNEL)}, revoked.id)::text AS notified FROM revoked`,
    [id, workspaceId, now],
  );
  return row ?? null;
}
