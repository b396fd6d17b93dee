import type { Static } from '@sinclair/typebox';
import type { Queryable } from '../../db/db.js';
import { SetList } from '../../db/set.js';
import { Where } from '../../db/where.js';
import { fetchPage, type Cursor, type Page } from '../../db/keyset.js';
import { shape } from '../../http/shape.js';
import { newId } from '../../lib/ids.js';
import { toIso } from '../../lib/iso.js';
import type { SecretBox } from '../../lib/secretbox.js';
import { newSigningKey, newSigningSecret } from '../../engine/delivery/secrets.js';
import { sealUrl, type Route } from './destination.js';
import { openHeaders, redactHeaders, sealHeaders } from './headers.js';
import { signingSecrets } from '../../engine/delivery/secrets.js';

export { signingSecrets };
import { WebhookEndpoint } from './schemas.js';

export interface EndpointRow {
  id: string;
  workspace_id: string;
  url: string;
  description: string | null;
  subscribed_events: string[];
  active: boolean;
  disabled_reason: 'manual' | 'auto' | 'gone' | null;
  rate_limit: number | null;
  ordering: 'none' | 'subject';
  propagate_trace: boolean;
  headers_enc: string | null;
  secret_enc: string;
  previous_secret_enc: string | null;
  previous_secret_expires_at: Date | null;
  consecutive_failures: number;
  throttle_share: number | null;
  throttled_since: Date | null;
  alerts: boolean;
  failing_since: Date | null;
  failing_status: number | null;
  failing_error: string | null;
  failing_waiting: number | null;
  signature_scheme: 'v1' | 'v1a';
  public_key: string | null;
  url_enc: string | null;
  exchange: string | null;
  routing_key: string | null;
  subject: string | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * The WebhookEndpoint schema read from its row, by the shape's rule (http/shape.ts); `headers` are
 * opened apart (toView), `stats` added by the list's expand, `throttle` read from the two columns
 * the workers write (engine/throttles.ts).
 */
export const endpointShape = shape(WebhookEndpoint, {
  headers: false,
  stats: false,
  throttle: {
    columns: ['throttle_share', 'throttled_since'],
    read: (row) => (row.throttled_since === null ? null : { concurrency: row.throttle_share as number, since: toIso(row.throttled_since as Date) }),
    json: null,
  },
  failing: {
    columns: ['failing_since', 'failing_status', 'failing_error', 'failing_waiting'],
    read: (row) =>
      row.failing_since === null
        ? null
        : { since: toIso(row.failing_since as Date), responseStatus: row.failing_status, error: row.failing_error, deliveriesWaiting: row.failing_waiting ?? 0 },
    json: null,
  },
});

/** What the view shows and what sending needs, which the view never shows. */
export const ENDPOINT_COLUMNS = `${endpointShape.columns}, workspace_id, headers_enc, secret_enc, previous_secret_enc, previous_secret_expires_at, consecutive_failures, url_enc`;

/**
 * A new signing secret of a scheme: a `whsec_` HMAC secret for v1, a `whsk_` ed25519 private key
 * with its `whpk_` public key for v1a.
 */
function newSecretOf(scheme: 'v1' | 'v1a'): { secret: string; publicKey: string | null } {
  return scheme === 'v1a' ? newSigningKey() : { secret: newSigningSecret(), publicKey: null };
}

/**
 * Creates an active endpoint with a fresh secret (v1) or key pair (v1a), returned in clear: the API
 * shows a v1 secret this once, and a v1a private key never.
 */
export async function createEndpoint(
  q: Queryable,
  box: SecretBox,
  input: {
    workspaceId: string;
    url: string;
    subscribedEvents: string[];
    description?: string | null;
    rateLimit?: number | null;
    headers?: Record<string, string> | null;
    ordering?: 'none' | 'subject';
    signatureScheme?: 'v1' | 'v1a';
    route?: Partial<Route>;
    propagateTrace?: boolean;
  },
  now: Date,
): Promise<{ row: EndpointRow; secret: string }> {
  const scheme = input.signatureScheme ?? 'v1';
  const { secret, publicKey } = newSecretOf(scheme);
  const target = sealUrl(box, input.url);
  const [row] = await q.query<EndpointRow>(
    `INSERT INTO webhook_endpoints (id, workspace_id, url, description, subscribed_events, active, rate_limit, headers_enc, ordering, propagate_trace, secret_enc,
                                    created_at, updated_at, signature_scheme, public_key, url_enc, exchange, routing_key, subject)
     VALUES ($1, $2, $3, $4, $5, true, $6, $7, $8, $9, $10, $11, $11, $12, $13, $14, $15, $16, $17) RETURNING ${ENDPOINT_COLUMNS}`,
    [
      newId('whe', now),
      input.workspaceId,
      target.url,
      input.description ?? null,
      input.subscribedEvents,
      input.rateLimit ?? null,
      sealHeaders(box, input.headers ?? null),
      input.ordering ?? 'none',
      input.propagateTrace ?? false,
      box.encrypt(secret),
      now,
      scheme,
      publicKey,
      target.urlEnc,
      input.route?.exchange ?? null,
      input.route?.routingKey ?? null,
      input.route?.subject ?? null,
    ],
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


export type EndpointView = Static<typeof WebhookEndpoint>;

/**
 * The public shape: never any secret, sealed or not. The headers' values are shown only with
 * `revealHeaders` (a credential that may change the endpoint): they are often the receiver's
 * credentials, and a reader sees only their names.
 */
export function toView(row: EndpointRow, box: SecretBox, revealHeaders: boolean): EndpointView {
  const headers = openHeaders(box, row.headers_enc);
  return endpointShape.view(row, { headers: revealHeaders ? headers : redactHeaders(headers) });
}

export async function listEndpoints(q: Queryable, workspaceId: string, cursor: Cursor | null, limit: number): Promise<Page<EndpointRow>> {
  const where = new Where().add('workspace_id = $?', workspaceId).add('deleted_at IS NULL');
  return fetchPage(q, { select: `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints`, where, cursor, limit });
}

export interface EndpointChanges {
  /** As shown, and sealed when it carries a secret (sealUrl). */
  url?: { url: string; urlEnc: string | null };
  exchange?: string | null;
  routingKey?: string | null;
  subject?: string | null;
  subscribedEvents?: string[];
  description?: string | null;
  rateLimit?: number | null;
  /** Sealed already (sealHeaders); null clears them. */
  headersEnc?: string | null;
  ordering?: 'none' | 'subject';
  propagateTrace?: boolean;
  alerts?: boolean;
  active?: boolean;
}

/** The columns of an endpoint's failure incident, all null while it has none. */
const INCIDENT_COLUMNS = ['failing_since', 'failing_status', 'failing_error', 'failing_waiting', 'disable_warned_at'];

/**
 * Applies the given fields. Pausing records `manual` unless the endpoint is already inactive (an
 * auto-disabled one keeps saying why); re-enabling clears the reason and, when it was inactive,
 * the consecutive failure count and the failure incident. In SET, column names read the row's values before the update.
 */
export async function updateEndpoint(q: Queryable, workspaceId: string, id: string, changes: EndpointChanges, now: Date): Promise<EndpointRow | null> {
  const set = new SetList([id, workspaceId, now], 'updated_at = $3')
    .field('url', changes.url?.url)
    .field('url_enc', changes.url === undefined ? undefined : changes.url.urlEnc)
    .field('exchange', changes.exchange)
    .field('routing_key', changes.routingKey)
    .field('subject', changes.subject)
    .field('subscribed_events', changes.subscribedEvents)
    .field('description', changes.description)
    .field('rate_limit', changes.rateLimit)
    .field('headers_enc', changes.headersEnc)
    .field('ordering', changes.ordering)
    .field('propagate_trace', changes.propagateTrace)
    .field('alerts', changes.alerts);
  // Paused or its alerts turned off, an endpoint's failure incident ends (webhooks/alerts/check.ts);
  // re-enabled after being disabled, it starts with none.
  if (changes.active === false || changes.alerts === false) for (const column of INCIDENT_COLUMNS) set.add(`${column} = NULL`);
  else if (changes.active === true) for (const column of INCIDENT_COLUMNS) set.add(`${column} = CASE WHEN active THEN ${column} END`);
  if (changes.active === false) {
    set.add('active = false').add("disabled_reason = CASE WHEN active OR disabled_reason IS NULL THEN 'manual' ELSE disabled_reason END");
  } else if (changes.active === true) {
    set.add('active = true').add('disabled_reason = NULL').add('consecutive_failures = CASE WHEN active THEN consecutive_failures ELSE 0 END');
  }
  const [row] = await q.query<EndpointRow>(
    `UPDATE webhook_endpoints SET ${set.sql}
      WHERE id = $1 AND workspace_id = $2 AND deleted_at IS NULL RETURNING ${ENDPOINT_COLUMNS}`,
    set.params,
  );
  return row ?? null;
}

/** Soft delete: the row stays for its delivery history, but is inactive and hidden from reads. */
export async function deleteEndpoint(q: Queryable, workspaceId: string, id: string, now: Date): Promise<boolean> {
  const rows = await q.query(
    `UPDATE webhook_endpoints
        SET deleted_at = $3, updated_at = $3, active = false,
            disabled_reason = CASE WHEN active OR disabled_reason IS NULL THEN 'manual' ELSE disabled_reason END
      WHERE id = $1 AND workspace_id = $2 AND deleted_at IS NULL RETURNING id`,
    [id, workspaceId, now],
  );
  return rows.length === 1;
}

export const PREVIOUS_SECRET_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * Draws a new secret (a new key pair for v1a); the current one becomes the previous one and keeps
 * signing for 24 hours. A second rotation inside that window drops the oldest secret at once: only
 * two ever sign. One statement, so concurrent rotations cannot lose a secret between read and write:
 * both kinds are drawn, and the endpoint's scheme picks one.
 */
export async function rotateSecret(
  q: Queryable,
  box: SecretBox,
  workspaceId: string,
  id: string,
  now: Date,
): Promise<{ secret: string | null; publicKey: string | null; previousSecretExpiresAt: Date } | null> {
  const v1 = newSecretOf('v1');
  const v1a = newSecretOf('v1a');
  const expires = new Date(now.getTime() + PREVIOUS_SECRET_TTL_MS);
  const [row] = await q.query<{ signature_scheme: 'v1' | 'v1a' }>(
    `UPDATE webhook_endpoints
        SET previous_secret_enc = secret_enc, previous_secret_expires_at = $4, updated_at = $5,
            secret_enc = CASE WHEN signature_scheme = 'v1a' THEN $6 ELSE $3 END,
            public_key = CASE WHEN signature_scheme = 'v1a' THEN $7 ELSE NULL END
      WHERE id = $1 AND workspace_id = $2 AND deleted_at IS NULL RETURNING signature_scheme`,
    [id, workspaceId, box.encrypt(v1.secret), expires, now, box.encrypt(v1a.secret), v1a.publicKey],
  );
  if (!row) return null;
  return row.signature_scheme === 'v1a'
    ? { secret: null, publicKey: v1a.publicKey, previousSecretExpiresAt: expires }
    : { secret: v1.secret, publicKey: null, previousSecretExpiresAt: expires };
}

export interface LockedEndpoint {
  id: string;
  active: boolean;
  disabled_reason: 'manual' | 'auto' | 'gone' | null;
  deleted_at: Date | null;
  ordering: 'none' | 'subject';
}

/**
 * Locks the endpoint row (deleted or not) for a transaction that enqueues to it: a concurrent pause
 * waits for this commit and then disables the row we queued, or we wait for it and see it inactive.
 */
export async function lockEndpoint(
  q: Queryable,
  workspaceId: string,
  id: string,
): Promise<LockedEndpoint | null> {
  const [row] = await q.query<LockedEndpoint>(
    'SELECT id, active, disabled_reason, deleted_at, ordering FROM webhook_endpoints WHERE id = $1 AND workspace_id = $2 FOR UPDATE',
    [id, workspaceId],
  );
  return row ?? null;
}
