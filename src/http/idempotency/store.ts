import { createHash } from 'node:crypto';
import type { Queryable } from '../../db/db.js';
import { newId } from '../../lib/ids.js';
import type { SecretBox } from '../../lib/secretbox.js';

/** How long a key's response is kept and replayed (docs/idempotency.md). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** A stored response, as a retry gets it back. */
export interface StoredResponse {
  requestHash: string;
  status: number;
  contentType: string;
  body: string;
}

interface Row {
  request_hash: string;
  status: number;
  content_type: string;
  response_enc: string;
}

/** The scope of a key: the workspace a request acts in (none for user routes) and the credential's user, or the API key. */
export function keyScope(workspaceId: string | null, owner: string): string {
  return `${workspaceId ?? '-'}/${owner}`;
}

/**
 * The advisory lock of a key in its scope: a signed 64-bit number from the SHA-256 of both, so
 * requests with one key in any number of processes take the same lock.
 */
export function lockNumber(scope: string, key: string): string {
  return createHash('sha256').update(scope).update('\0').update(key).digest().readBigInt64BE(0).toString();
}

/**
 * Takes the key's lock for the rest of the transaction; false while another transaction holds it
 * (the first request with the key is still running). A statement of its own: the look-up that
 * follows must see what the previous holder committed, and under READ COMMITTED a statement sees
 * what committed before it began.
 */
export async function tryLock(q: Queryable, lock: string): Promise<boolean> {
  const [row] = await q.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1::bigint) AS locked', [lock]);
  return row.locked;
}

/** The response stored for the key since `since`, if any; its body decrypted. */
export async function findResponse(q: Queryable, box: SecretBox, scope: string, key: string, since: Date): Promise<StoredResponse | null> {
  const [row] = await q.query<Row>(
    'SELECT request_hash, status, content_type, response_enc FROM idempotency_keys WHERE scope = $1 AND key = $2 AND created_at > $3',
    [scope, key, since],
  );
  if (!row) return null;
  return { requestHash: row.request_hash, status: row.status, contentType: row.content_type, body: box.decryptOnce(row.response_enc) };
}

/**
 * Stores the response, in the transaction of the change it answers. A row of the key that has
 * expired but is not yet cleaned up is replaced; an unexpired one cannot exist here (the caller
 * holds the key and found none), and is never overwritten.
 */
export async function saveResponse(q: Queryable, box: SecretBox, scope: string, key: string, response: StoredResponse, now: Date): Promise<void> {
  const rows = await q.query(
    `INSERT INTO idempotency_keys AS k (id, scope, key, request_hash, status, content_type, response_enc, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (scope, key) DO UPDATE
        SET id = EXCLUDED.id, request_hash = EXCLUDED.request_hash, status = EXCLUDED.status,
            content_type = EXCLUDED.content_type, response_enc = EXCLUDED.response_enc, created_at = EXCLUDED.created_at
      WHERE k.created_at <= $9
     RETURNING k.id`,
    [newId('idk', now), scope, key, response.requestHash, response.status, response.contentType, box.encrypt(response.body), now, expiredBefore(now)],
  );
  if (rows.length === 0) throw new Error('an unexpired response is already stored for this idempotency key');
}

/** Responses stored at or before this time are expired. */
export function expiredBefore(now: Date): Date {
  return new Date(now.getTime() - IDEMPOTENCY_TTL_MS);
}
