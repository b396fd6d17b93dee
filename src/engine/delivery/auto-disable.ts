import { WORKSPACE_ROLE_PERMISSIONS, resolveWorkspaceRole, type OrgRole, type WorkspaceRole } from '../../lib/permissions.js';
import type { Queryable } from '../../db/db.js';
import { newId } from '../../lib/ids.js';
import type { EventInput } from '../log/store.js';

/** Consecutive failed deliveries after which an endpoint is disabled (docs/delivery.md#states). */
export const AUTO_DISABLE_AFTER = 5;

export const AUTO_DISABLED_EVENT = 'webhook.endpoint.auto_disabled';

/** A receiver's answer that disables its endpoint at once: 410 Gone. */
export const GONE = 410;

/** Why the service disabled an endpoint: failed deliveries in a row (`auto`), or a 410 Gone (`gone`). */
export type AutoDisableReason = 'auto' | 'gone';

/**
 * Writes events and their deliveries inside the caller's transaction: the outbox
 * (engine/outbox/outbox.ts), which the engine is given rather than imports, since the outbox hands
 * its deliveries to the engine.
 */
export interface EventWriter {
  writeIn(q: Queryable, write: { change: null; events: { event: EventInput }[] }): Promise<unknown>;
}

/**
 * Auto-disables an endpoint inside the caller's transaction (docs/delivery.md#states): the endpoint turns inactive
 * with `reason` (`auto` after AUTO_DISABLE_AFTER failed deliveries, `gone` after a 410), its pending deliveries become `disabled`, the event is emitted (fanned out to
 * every subscribed endpoint; this one, now inactive, gets a `disabled` row), and every user who can
 * read the workspace's webhooks is notified. Returns false when the endpoint was no longer active.
 */
export async function autoDisable(
  q: Queryable,
  outbox: EventWriter,
  endpoint: { id: string; workspaceId: string; url: string },
  now: Date,
  reason: AutoDisableReason = 'auto',
): Promise<boolean> {
  const [disabled] = await q.query<{ id: string }>(
    `UPDATE webhook_endpoints SET active = false, disabled_reason = $3, updated_at = $2
      WHERE id = $1 AND active AND deleted_at IS NULL RETURNING id`,
    [endpoint.id, now, reason],
  );
  if (!disabled) return false;
  await disablePendingDeliveries(q, endpoint.id);
  const subject = { type: 'webhook_endpoint', id: endpoint.id, url: `/v1/webhooks/endpoints/${endpoint.id}` };
  await outbox.writeIn(q, { change: null, events: [{ event: { workspaceId: endpoint.workspaceId, type: AUTO_DISABLED_EVENT, subject, at: now } }] });

  const users = await developerReaders(q, endpoint.workspaceId);
  if (users.length > 0) {
    const why = reason === 'gone' ? 'its receiver answered 410 Gone' : `${AUTO_DISABLE_AFTER} consecutive failed deliveries`;
    const message =
      `Webhook endpoint ${endpoint.id} (${hostOf(endpoint.url)}) was disabled after ${why}. ` +
      'New events are kept as disabled deliveries; fix the receiver, then re-enable the endpoint and replay what it missed.';
    await q.query(
      `INSERT INTO notifications (id, user_id, workspace_id, type, subject, message, created_at)
       SELECT n.id, n.user_id, $1, $2, $3::jsonb, $4, $5
         FROM unnest($6::text[], $7::text[]) AS n (id, user_id)`,
      [endpoint.workspaceId, AUTO_DISABLED_EVENT, JSON.stringify(subject), message, now, users.map(() => newId('ntf', now)), users],
    );
  }
  return true;
}

/**
 * Users holding `workspace:developer:read` in the workspace: its explicit members and the owners
 * and admins of its organization, judged by the same role resolution the API uses.
 */
export async function developerReaders(q: Queryable, workspaceId: string): Promise<string[]> {
  const rows = await q.query<{ user_id: string; workspace_role: WorkspaceRole | null; org_role: OrgRole | null }>(
    `SELECT u.user_id, wm.role AS workspace_role, om.role AS org_role
       FROM (SELECT user_id FROM workspace_members WHERE workspace_id = $1
             UNION
             SELECT m.user_id FROM organization_members m JOIN workspaces w ON w.organization_id = m.organization_id
              WHERE w.id = $1) AS u
       JOIN workspaces w ON w.id = $1
       LEFT JOIN workspace_members wm ON wm.workspace_id = $1 AND wm.user_id = u.user_id
       LEFT JOIN organization_members om ON om.organization_id = w.organization_id AND om.user_id = u.user_id
      ORDER BY u.user_id`,
    [workspaceId],
  );
  return rows
    .filter((r) => {
      const resolved = resolveWorkspaceRole(r.workspace_role, r.org_role);
      return resolved !== null && WORKSPACE_ROLE_PERMISSIONS[resolved.role].includes('workspace:developer:read');
    })
    .map((r) => r.user_id);
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'invalid URL';
  }
}

/** A paused or deleted endpoint sends nothing more: its queued deliveries stay in history as `disabled`. */
export async function disablePendingDeliveries(q: Queryable, endpointId: string): Promise<number> {
  const rows = await q.query(
    `UPDATE webhook_deliveries SET status = 'disabled', next_attempt_at = NULL
      WHERE endpoint_id = $1 AND status = 'pending' RETURNING id`,
    [endpointId],
  );
  return rows.length;
}
