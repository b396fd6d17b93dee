import type { Queryable } from '../../db/db.js';
import { newId } from '../../lib/ids.js';
import type { SecretBox } from '../../lib/secretbox.js';
import { newSigningSecret } from '../secrets.js';

export interface EndpointRow {
  id: string;
  workspace_id: string;
  url: string;
  description: string | null;
  subscribed_events: string[];
  active: boolean;
  disabled_reason: 'manual' | 'auto' | null;
  secret_enc: string;
  previous_secret_enc: string | null;
  previous_secret_expires_at: Date | null;
  consecutive_failures: number;
  created_at: Date;
  updated_at: Date;
}

export const ENDPOINT_COLUMNS =
  'id, workspace_id, url, description, subscribed_events, active, disabled_reason, secret_enc, previous_secret_enc, previous_secret_expires_at, consecutive_failures, created_at, updated_at';

/** Creates an active endpoint with a fresh secret; the secret is returned in clear this once. */
export async function createEndpoint(
  q: Queryable,
  box: SecretBox,
  input: { workspaceId: string; url: string; subscribedEvents: string[]; description?: string | null },
  now: Date,
): Promise<{ row: EndpointRow; secret: string }> {
  const secret = newSigningSecret();
  const [row] = await q.query<EndpointRow>(
    `INSERT INTO webhook_endpoints (id, workspace_id, url, description, subscribed_events, active, secret_enc, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, true, $6, $7, $7) RETURNING ${ENDPOINT_COLUMNS}`,
    [newId('whe', now), input.workspaceId, input.url, input.description ?? null, input.subscribedEvents, box.encrypt(secret), now],
  );
  return { row, secret };
}

export async function findEndpoint(q: Queryable, workspaceId: string, id: string): Promise<EndpointRow | null> {
  const [row] = await q.query<EndpointRow>(
    `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND workspace_id = $2 AND deleted_at IS NULL`,
    [id, workspaceId],
  );
  return row ?? null;
}

/** The secrets that sign a delivery now: the current one, plus the previous one inside its 24 h overlap. */
export function signingSecrets(box: SecretBox, row: Pick<EndpointRow, 'secret_enc' | 'previous_secret_enc' | 'previous_secret_expires_at'>, now: Date): string[] {
  const secrets = [box.decrypt(row.secret_enc)];
  if (row.previous_secret_enc && row.previous_secret_expires_at && row.previous_secret_expires_at > now) {
    secrets.push(box.decrypt(row.previous_secret_enc));
  }
  return secrets;
}
