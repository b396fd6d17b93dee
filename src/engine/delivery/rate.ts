import type { Queryable } from '../../db/db.js';
import type { Job } from './job.js';

/** Sends of one endpoint that may go out together: this much of its rate at once, at most. */
export const RATE_WINDOW_MS = 50;

/** Endpoints remembered as having their row in webhook_endpoint_rates, at most. */
const MAX_KNOWN = 10_000;

/**
 * An endpoint's `rateLimit` (deliveries per second), enforced across every worker process through
 * one row per endpoint: `next_send_at` is the earliest time its next delivery may go (the generic
 * cell rate algorithm). A worker asks for as many sends as it has jobs of the endpoint; the update
 * grants those whose time falls within RATE_WINDOW_MS from now, one 1/rate apart from the last one
 * granted anywhere, and moves `next_send_at` past them. The SET expressions read the row as the
 * update finds it, after any concurrent update has committed, so two workers never share a time.
 *
 * A job not granted gets a time: when its turn would come if nothing else were sent meanwhile. It
 * is deferred until then without an attempt (dispatch.ts) and asks again when due.
 */
export class SendTimes {
  /** Endpoints whose row this worker has made sure exists. */
  private readonly known = new Set<string>();

  constructor(private readonly q: Queryable) {}

  /** The rate-limited jobs not granted now, each with the time its turn comes (by job id). */
  async assign(jobs: Job[], now: Date): Promise<Map<string, Date>> {
    const later = new Map<string, Date>();
    const groups = new Map<string, Job[]>();
    for (const job of jobs) {
      if (job.rateLimit === null || !job.endpointActive) continue;
      const group = groups.get(job.endpointId);
      if (group) group.push(job);
      else groups.set(job.endpointId, [job]);
    }
    if (groups.size === 0) return later;
    const ids = [...groups.keys()];
    const unknown = ids.filter((id) => !this.known.has(id));
    if (unknown.length > 0) {
      await this.q.query(
        `INSERT INTO webhook_endpoint_rates (endpoint_id, next_send_at, granted)
         SELECT id, $2::timestamptz, 0 FROM unnest($1::text[]) AS id ON CONFLICT (endpoint_id) DO NOTHING`,
        [unknown, now],
      );
      if (this.known.size + unknown.length > MAX_KNOWN) this.known.clear();
      for (const id of unknown) this.known.add(id);
    }
    const steps = ids.map((id) => 1000 / groups.get(id)![0].rateLimit!);
    const granted = `least(x.want, greatest(0, floor(
        (extract(epoch FROM $2::timestamptz) * 1000 + $3 - extract(epoch FROM greatest(r.next_send_at, $2::timestamptz)) * 1000) / x.step_ms)::int + 1))`;
    const rows = await this.q.query<{ endpoint_id: string; next_send_at: Date; granted: number }>(
      `UPDATE webhook_endpoint_rates r
          SET granted = ${granted},
              next_send_at = greatest(r.next_send_at, $2::timestamptz) + ${granted} * x.step_ms * interval '1 millisecond'
         FROM unnest($1::text[], $4::int[], $5::float8[]) AS x (id, want, step_ms)
        WHERE r.endpoint_id = x.id
       RETURNING r.endpoint_id, r.next_send_at, r.granted`,
      [ids, now, RATE_WINDOW_MS, ids.map((id) => groups.get(id)!.length), steps],
    );
    for (const row of rows) {
      const group = groups.get(row.endpoint_id)!;
      const step = 1000 / group[0].rateLimit!;
      const next = row.next_send_at.getTime();
      group.forEach((job, i) => {
        if (i >= row.granted) later.set(job.id, new Date(Math.ceil(next + (i - row.granted) * step)));
      });
    }
    return later;
  }
}
