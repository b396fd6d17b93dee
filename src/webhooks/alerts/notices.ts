import type { Queryable } from '../../db/db.js';
import type { EventType } from '../../engine/log/catalog.js';
import { newId } from '../../lib/ids.js';
import { writeIn } from '../../engine/outbox/outbox.js';
import { AUTO_DISABLE_AFTER, developerReaders } from '../../engine/delivery/auto-disable.js';
import { DIGEST_NOTICE, DISABLING_NOTICE, FAILING_EVENT, RECOVERED_EVENT } from '../../engine/notices.js';

export { DIGEST_NOTICE, DISABLING_NOTICE, FAILING_EVENT, RECOVERED_EVENT };


export type AlertKind = 'failing' | 'disabling' | 'recovered';

/** What an alert tells about its endpoint. */
export interface Alert {
  kind: AlertKind;
  endpoint: { id: string; workspaceId: string; url: string };
  /** When the endpoint began failing (its first failed attempt after its last success). */
  since: Date;
  /** The latest failed attempt's HTTP status and error; for `recovered`, when it delivered again. */
  responseStatus: number | null;
  error: string | null;
  deliveredAt?: Date;
  /** Deliveries waiting for a retry. */
  waiting: number;
}

export interface DigestSettings {
  alertDigestWindowMs: number;
  alertDigestAfter: number;
}

const EVENTS: Record<AlertKind, EventType | null> = { failing: FAILING_EVENT, disabling: null, recovered: RECOVERED_EVENT };

/**
 * Tells of an alert inside the caller's transaction, the one whose conditional UPDATE decided it:
 * the event (failing and recovered), then one notification per person who would be told of an
 * auto-disable, unless the workspace is past SVC_ALERT_DIGEST_AFTER notices in this window: then
 * the notice is counted for the window's digest (digest()). Returns whether notifications were written.
 */
export async function tell(q: Queryable, alert: Alert, now: Date, settings: DigestSettings): Promise<boolean> {
  const { endpoint } = alert;
  const subject = { type: 'webhook_endpoint', id: endpoint.id, url: `/v1/webhooks/endpoints/${endpoint.id}` };
  const event = EVENTS[alert.kind];
  if (event) await writeIn(q, { change: null, events: [{ event: { workspaceId: endpoint.workspaceId, type: event, subject, at: now } }] });
  if (await held(q, endpoint.workspaceId, alert.kind, now, settings)) return false;
  return notify(q, endpoint.workspaceId, `webhook.endpoint.${alert.kind}`, subject, messageOf(alert), now);
}

/** Counts the notice in its workspace's window; true when it is past the limit and left to the digest. */
async function held(q: Queryable, workspaceId: string, kind: AlertKind, now: Date, settings: DigestSettings): Promise<boolean> {
  const startsAt = new Date(Math.floor(now.getTime() / settings.alertDigestWindowMs) * settings.alertDigestWindowMs);
  const past = (k: AlertKind) => `CASE WHEN $3 = '${k}' AND w.notices >= $4 THEN 1 ELSE 0 END`;
  const [row] = await q.query<{ notices: number }>(
    `INSERT INTO webhook_alert_windows AS w (workspace_id, starts_at, notices) VALUES ($1, $2, 1)
     ON CONFLICT (workspace_id, starts_at) DO UPDATE SET notices = w.notices + 1,
       held_failing = w.held_failing + ${past('failing')},
       held_disabling = w.held_disabling + ${past('disabling')},
       held_recovered = w.held_recovered + ${past('recovered')}
     RETURNING notices`,
    [workspaceId, startsAt, kind, settings.alertDigestAfter],
  );
  return row.notices > settings.alertDigestAfter;
}

/**
 * Sends the digest of every window that has ended with notices held: one notification per person,
 * decided by the conditional UPDATE of the window's row (one process wins). Windows older than a
 * day are deleted. Returns whether notifications were written.
 */
export async function digest(q: Queryable, now: Date, settings: DigestSettings): Promise<boolean> {
  const windows = await q.query<{ workspace_id: string; starts_at: Date; held_failing: number; held_disabling: number; held_recovered: number }>(
    `UPDATE webhook_alert_windows SET digest_at = $1
      WHERE digest_at IS NULL AND starts_at <= $2 AND held_failing + held_disabling + held_recovered > 0
     RETURNING workspace_id, starts_at, held_failing, held_disabling, held_recovered`,
    [now, new Date(now.getTime() - settings.alertDigestWindowMs)],
  );
  let written = false;
  for (const w of windows) {
    const ends = new Date(w.starts_at.getTime() + settings.alertDigestWindowMs);
    const parts = [
      count(w.held_failing, 'started failing'),
      count(w.held_disabling, 'came within one failed delivery of being disabled'),
      count(w.held_recovered, 'delivered again'),
    ].filter((p) => p !== null);
    const message =
      `More webhook endpoints of this workspace changed between ${clock(w.starts_at)} and ${clock(ends)} UTC than were told one by one: ` +
      `${parts.join('; ')}. The endpoints list shows which are failing.`;
    if (await notify(q, w.workspace_id, DIGEST_NOTICE, null, message, now)) written = true;
  }
  await q.query("DELETE FROM webhook_alert_windows WHERE starts_at < $1::timestamptz - interval '1 day'", [now]);
  return written;
}

function count(n: number, what: string): string | null {
  if (n === 0) return null;
  return `${n} more ${n === 1 ? 'endpoint' : 'endpoints'} ${what}`;
}

/** One notification per person who can read the workspace's webhooks. */
async function notify(q: Queryable, workspaceId: string, type: string, subject: object | null, message: string, now: Date): Promise<boolean> {
  const users = await developerReaders(q, workspaceId);
  if (users.length === 0) return false;
  await q.query(
    `INSERT INTO notifications (id, user_id, workspace_id, type, subject, message, created_at)
     SELECT n.id, n.user_id, $1, $2, $3::jsonb, $4, $5 FROM unnest($6::text[], $7::text[]) AS n (id, user_id)`,
    [workspaceId, type, subject === null ? null : JSON.stringify(subject), message, now, users.map(() => newId('ntf', now)), users],
  );
  return true;
}

/** A sentence for people: which endpoint, what fails and since when, what happens next. */
export function messageOf(alert: Alert): string {
  const name = `Webhook endpoint ${alert.endpoint.id} (${hostOf(alert.endpoint.url)})`;
  const what = whatFails(alert.responseStatus, alert.error);
  const waiting = `${alert.waiting} ${alert.waiting === 1 ? 'delivery waits' : 'deliveries wait'} for a retry`;
  switch (alert.kind) {
    case 'failing':
      return `${name} has failed every attempt since ${clock(alert.since)} UTC (${what}); ${waiting}. It is disabled after ${AUTO_DISABLE_AFTER} failed deliveries in a row: fix the receiver, or pause the endpoint.`;
    case 'disabling':
      return `${name} is one failed delivery from being disabled: ${AUTO_DISABLE_AFTER - 1} deliveries in a row have failed, and every attempt since ${clock(alert.since)} UTC (${what}); ${waiting}.`;
    case 'recovered':
      return `${name} delivers again since ${clock(alert.deliveredAt ?? alert.since)} UTC, after failing since ${clock(alert.since)} UTC. Deliveries that failed for good can be recovered from its page.`;
  }
}

export function whatFails(responseStatus: number | null, error: string | null): string {
  // The delivery log's error of a non-2xx answer already names its status.
  if (responseStatus !== null && error) return error.startsWith(`HTTP ${responseStatus}`) ? cut(error) : `HTTP ${responseStatus}: ${cut(error)}`;
  if (responseStatus !== null) return `HTTP ${responseStatus}`;
  return error ? cut(error) : 'no answer';
}

const cut = (text: string) => (text.length > 200 ? `${text.slice(0, 199)}…` : text);

/** `2026-01-01 09:15`: a time as people read it in a sentence. */
const clock = (at: Date) => at.toISOString().slice(0, 16).replace('T', ' ');

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'invalid URL';
  }
}
