import type { Config } from '../../lib/config.js';
import type { Db, Queryable } from '../../db/db.js';
import type { Clock } from '../../lib/clock.js';
import { startPeriodic } from '../../lib/periodic.js';
import { AUTO_DISABLE_AFTER } from '../../engine/delivery/auto-disable.js';
import { digest, tell, type Alert } from './notices.js';

export type AlertSettings = Pick<Config, 'alertFailingAfterMs' | 'alertFailingDeliveries' | 'alertDigestWindowMs' | 'alertDigestAfter'>;

export interface AlertDeps {
  db: Db;
  clock: Clock;
  config: AlertSettings & Pick<Config, 'alertCheckMs'>;
  /** Pushes the notifications just written to their people's devices (the push queue). */
  push?: { wake(): void };
}

/** An endpoint worth a look, with its newest attempt. */
interface Candidate {
  id: string;
  workspace_id: string;
  url: string;
  /** Active, not deleted, alerts on. */
  watched: boolean;
  consecutive_failures: number;
  failing_since: Date | null;
  disable_warned_at: Date | null;
  ok: boolean | null;
  started_at: Date | null;
  response_status: number | null;
  error: string | null;
}

/**
 * The endpoints to look at: those with deliveries waiting for a retry (read as a loose scan of the
 * retrying index: one probe per endpoint, however many deliveries wait), active with failed
 * deliveries in a row, or with an incident open (both through migrations/025's partial index); each with its newest attempt (one probe of the attempts index).
 */
const CANDIDATES = `
  WITH RECURSIVE retrying AS (
    (SELECT endpoint_id FROM webhook_deliveries WHERE status = 'pending' AND attempt > 0 ORDER BY endpoint_id LIMIT 1)
    UNION ALL
    SELECT (SELECT d.endpoint_id FROM webhook_deliveries d
             WHERE d.status = 'pending' AND d.attempt > 0 AND d.endpoint_id > r.endpoint_id ORDER BY d.endpoint_id LIMIT 1)
      FROM retrying r WHERE r.endpoint_id IS NOT NULL
  ), candidates AS (
    SELECT endpoint_id AS id FROM retrying WHERE endpoint_id IS NOT NULL
    UNION
    SELECT id FROM webhook_endpoints WHERE failing_since IS NOT NULL OR (consecutive_failures > 0 AND active)
  )
  SELECT e.id, e.workspace_id, e.url, (e.active AND e.deleted_at IS NULL AND e.alerts) AS watched, e.consecutive_failures,
         e.failing_since, e.disable_warned_at, l.ok, l.started_at, l.response_status, l.error
    FROM candidates c JOIN webhook_endpoints e ON e.id = c.id
    LEFT JOIN LATERAL (SELECT a.ok, a.started_at, a.response_status, a.error FROM webhook_delivery_attempts a
                        WHERE a.endpoint_id = e.id ORDER BY a.started_at DESC LIMIT 1) l ON true
   ORDER BY e.id`;

/**
 * Of endpoints whose newest attempt failed, those that have failed for the whole window: the newest
 * attempt before the window failed too, and none in it succeeded (read only then), with how many
 * deliveries wait for a retry.
 */
const FAILING = `
  SELECT c.id, b.ok AS before_ok,
         CASE WHEN b.ok = false THEN EXISTS (SELECT 1 FROM webhook_delivery_attempts a WHERE a.endpoint_id = c.id AND a.started_at > $2 AND a.ok) END AS ok_since,
         (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = c.id AND d.status = 'pending' AND d.attempt > 0)::int AS waiting
    FROM unnest($1::text[]) AS c (id)
    LEFT JOIN LATERAL (SELECT a.ok FROM webhook_delivery_attempts a WHERE a.endpoint_id = c.id AND a.started_at <= $2
                        ORDER BY a.started_at DESC LIMIT 1) b ON true`;

/** The incident columns, cleared. */
const CLEARED = 'failing_since = NULL, failing_status = NULL, failing_error = NULL, failing_waiting = NULL, disable_warned_at = NULL';

/**
 * One look at the endpoints with recent failures (docs/webhooks.md, Failure alerts). Each notice is
 * decided by a conditional UPDATE of the endpoint's incident columns, in the transaction that writes
 * the notice: however many processes look at once, one wins and the others change nothing.
 * Returns how many alerts were decided by this look.
 */
export async function checkAlerts(deps: AlertDeps): Promise<number> {
  const now = deps.clock.now();
  const settings = deps.config;
  const candidates = await deps.db.query<Candidate>(CANDIDATES);
  let decided = 0;
  let notified = false;
  const decide = async (alert: Alert, claim: (q: Queryable) => Promise<boolean>) => {
    const told = await deps.db.tx(async (q) => ((await claim(q)) ? { notified: await tell(q, alert, now, settings) } : null));
    if (told) decided++;
    if (told?.notified) notified = true;
  };

  const opening: Candidate[] = [];
  for (const c of candidates) {
    const endpoint = { id: c.id, workspaceId: c.workspace_id, url: c.url };
    if (c.failing_since && !c.watched) {
      // Paused, disabled, deleted or opted out: the incident ends without a notice.
      await deps.db.query(`UPDATE webhook_endpoints SET ${CLEARED} WHERE id = $1 AND failing_since IS NOT NULL`, [c.id]);
    } else if (c.failing_since && c.ok && c.started_at! > c.failing_since) {
      const since = c.failing_since;
      await decide({ kind: 'recovered', endpoint, since, deliveredAt: c.started_at!, responseStatus: null, error: null, waiting: 0 }, async (q) =>
        (await q.query(`UPDATE webhook_endpoints SET ${CLEARED} WHERE id = $1 AND failing_since = $2 RETURNING id`, [c.id, since])).length === 1,
      );
    } else if (c.failing_since && !c.disable_warned_at && c.consecutive_failures >= AUTO_DISABLE_AFTER - 1) {
      await warnDisabling(decide, c, now);
    } else if (!c.failing_since && c.watched && c.ok === false) {
      opening.push(c);
    }
  }
  await open(deps, now, opening, decide);
  if (await deps.db.tx((q) => digest(q, now, settings))) notified = true;
  // The notifications are committed: pushed in the background, never awaited here.
  if (notified) deps.push?.wake();
  return decided;
}

type Decide = (alert: Alert, claim: (q: Queryable) => Promise<boolean>) => Promise<void>;

/** The second notice of an incident: one failed delivery more and the endpoint is disabled. */
async function warnDisabling(decide: Decide, c: Candidate, now: Date): Promise<void> {
  const alert: Alert = {
    kind: 'disabling',
    endpoint: { id: c.id, workspaceId: c.workspace_id, url: c.url },
    since: c.failing_since!,
    responseStatus: c.response_status,
    error: c.error,
    waiting: 0,
  };
  await decide(alert, async (q) => {
    const [row] = await q.query<{ failing_since: Date; waiting: number }>(
      `UPDATE webhook_endpoints SET disable_warned_at = $2
        WHERE id = $1 AND failing_since IS NOT NULL AND disable_warned_at IS NULL AND consecutive_failures >= $3
          AND active AND deleted_at IS NULL AND alerts
       RETURNING failing_since,
                 (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = $1 AND d.status = 'pending' AND d.attempt > 0)::int AS waiting`,
      [c.id, now, AUTO_DISABLE_AFTER - 1],
    );
    if (row) Object.assign(alert, { since: row.failing_since, waiting: row.waiting });
    return row !== undefined;
  });
}

/**
 * Opens the incidents of the endpoints that now meet the rule: every attempt failed for
 * SVC_ALERT_FAILING_AFTER, and at least SVC_ALERT_FAILING_DELIVERIES deliveries fail (wait for a
 * retry, or failed in a row). The UPDATE that claims the incident finds when it began.
 */
async function open(deps: AlertDeps, now: Date, candidates: Candidate[], decide: Decide): Promise<void> {
  if (candidates.length === 0) return;
  const windowStart = new Date(now.getTime() - deps.config.alertFailingAfterMs);
  const facts = await deps.db.query<{ id: string; before_ok: boolean | null; ok_since: boolean | null; waiting: number }>(FAILING, [candidates.map((c) => c.id), windowStart]);
  const byId = new Map(facts.map((f) => [f.id, f]));
  for (const c of candidates) {
    const f = byId.get(c.id);
    if (!f || f.before_ok !== false || f.ok_since !== false) continue;
    if (f.waiting + c.consecutive_failures < deps.config.alertFailingDeliveries) continue;
    const alert: Alert = {
      kind: 'failing',
      endpoint: { id: c.id, workspaceId: c.workspace_id, url: c.url },
      since: windowStart,
      responseStatus: c.response_status,
      error: c.error,
      waiting: f.waiting,
    };
    await decide(alert, async (q) => {
      const [row] = await q.query<{ failing_since: Date }>(
        `UPDATE webhook_endpoints SET failing_status = $3, failing_error = $4, failing_waiting = $5,
                failing_since = (SELECT min(a.started_at) FROM webhook_delivery_attempts a
                                  WHERE a.endpoint_id = $1 AND a.started_at > coalesce(
                                    (SELECT max(o.started_at) FROM webhook_delivery_attempts o WHERE o.endpoint_id = $1 AND o.ok AND o.started_at <= $2),
                                    '-infinity'))
          WHERE id = $1 AND failing_since IS NULL AND active AND deleted_at IS NULL AND alerts
         RETURNING failing_since`,
        [c.id, windowStart, c.response_status, c.error, f.waiting],
      );
      if (row) alert.since = row.failing_since;
      return row !== undefined;
    });
    if (c.consecutive_failures >= AUTO_DISABLE_AFTER - 1) await warnDisabling(decide, { ...c, failing_since: alert.since }, now);
  }
}

/** The periodic check of `svc serve` and `svc worker`: every SVC_ALERT_CHECK. */
export function startAlerts(deps: AlertDeps, onError: (error: unknown) => void): { stop(): Promise<void> } {
  return startPeriodic(() => checkAlerts(deps), { firstMs: deps.config.alertCheckMs, intervalMs: deps.config.alertCheckMs }, onError);
}
