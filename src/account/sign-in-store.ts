import { randomBytes } from 'node:crypto';
import { createPersonalAccessToken, revokePersonalAccessToken } from './admin.js';
import type { Db, Queryable } from '../db/db.js';
import { hashToken } from '../lib/tokens.js';

/** A sign-in link's code is good for 10 minutes, once (docs/dashboard.md#opening-it). */
export const SIGN_IN_CODE_TTL_MS = 10 * 60_000;
/** What a code is exchanged for: a personal access token that expires after a working day. */
export const SESSION_TTL_MS = 12 * 3_600_000;
/** Rows are kept a day past their code's expiry: by then the token they minted has expired too. */
const KEEP_MS = 24 * 3_600_000;

/** 32 random bytes, base64url: the code a link carries in its fragment (never sent to a server by a browser). */
export const CODE_PATTERN = '^[A-Za-z0-9_-]{43}$';

export interface SignInLink {
  /** The one-time code; only its SHA-256 is stored. */
  code: string;
  expiresAt: Date;
}

/** Issues a one-time sign-in code for a user, clearing rows that can no longer matter on the way. */
export async function createSignInCode(db: Db, userId: string, now: Date): Promise<SignInLink> {
  const code = randomBytes(32).toString('base64url');
  const expiresAt = new Date(now.getTime() + SIGN_IN_CODE_TTL_MS);
  await db.tx(async (q) => {
    await q.query('DELETE FROM dashboard_sign_ins WHERE expires_at < $1', [new Date(now.getTime() - KEEP_MS)]);
    await q.query('INSERT INTO dashboard_sign_ins (code_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)', [hashToken(code), userId, now, expiresAt]);
  });
  return { code, expiresAt };
}

export interface Session {
  token: string;
  tokenId: string;
  userId: string;
  expiresAt: Date;
}

/**
 * Exchanges a code for a session token, in one transaction: the row is claimed only while unused
 * and unexpired, so two redemptions of one code cannot both succeed. Null when the code is
 * unknown, used or expired (which the caller does not tell apart).
 */
export async function redeemSignInCode(db: Db, code: string, now: Date): Promise<Session | null> {
  return db.tx(async (q) => {
    const [claimed] = await q.query<{ user_id: string }>(
      `UPDATE dashboard_sign_ins SET redeemed_at = $2
        WHERE code_hash = $1 AND redeemed_at IS NULL AND expires_at > $2
        RETURNING user_id`,
      [hashToken(code), now],
    );
    if (!claimed) return null;
    const expiresAt = new Date(now.getTime() + SESSION_TTL_MS);
    const pat = await createPersonalAccessToken(q, { userId: claimed.user_id, name: 'Dashboard session', test: false, expiresAt }, now);
    await q.query('UPDATE dashboard_sign_ins SET token_id = $2 WHERE code_hash = $1', [hashToken(code), pat.id]);
    return { token: pat.token, tokenId: pat.id, userId: claimed.user_id, expiresAt };
  });
}

/** Whether a personal access token was minted by a dashboard sign-in. */
export async function isSessionToken(q: Queryable, tokenId: string): Promise<boolean> {
  const rows = await q.query('SELECT 1 FROM dashboard_sign_ins WHERE token_id = $1', [tokenId]);
  return rows.length > 0;
}

/** Ends a dashboard session: its token is revoked, and every process drops it from its cache (NOTIFY). */
export async function endSession(q: Queryable, tokenId: string, now: Date): Promise<boolean> {
  return revokePersonalAccessToken(q, tokenId, now);
}

/** The link a person opens: the code rides in the fragment, which a browser never sends to a server. */
export function signInUrl(publicUrl: string, code: string): string {
  return `${publicUrl}/dashboard/#code=${code}`;
}

/** A user by id (usr_...) or e-mail address; null when there is none. */
export async function findUserByIdOrEmail(q: Queryable, idOrEmail: string): Promise<{ id: string; email: string } | null> {
  const [row] = await q.query<{ id: string; email: string }>('SELECT id, email FROM users WHERE id = $1 OR email = $1 LIMIT 1', [idOrEmail]);
  return row ?? null;
}
