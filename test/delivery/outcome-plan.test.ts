import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db, Queryable } from '../../src/db/db.js';
import type { Outcome } from '../../src/engine/delivery/job.js';
import { recordOutcomes, writeHeldOutcomes } from '../../src/engine/delivery/outcome.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { addEndpoint } from '../helpers/delivery.js';
import { successOf } from '../helpers/outcomes.js';

const PENDING = 3_000;
const BATCH = 50;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/** Every node of a plan that reads `relation` or one of its time partitions (the write's own ModifyTable node aside). */
function readsOf(plan: PlanNode, relation: string): PlanNode[] {
  const name = plan['Relation Name'];
  const ofIt = name === relation || name?.startsWith(`${relation}_`);
  const own = ofIt && plan['Node Type'] !== 'ModifyTable' ? [plan] : [];
  return [...own, ...(plan.Plans ?? []).flatMap((child) => readsOf(child, relation))];
}

/**
 * A backlog that the statistics do not know of yet: the table analysed while every row was
 * delivered, then thousands of rows pending again (a receiver back after an outage, a replay). The
 * outcome write of a batch must find each of its rows by primary key; a plan that starts from
 * "the pending rows" reads the whole backlog for every batch, and the drain slows as it grows.
 * Rows under a hold are written with generic plans (hold.ts), which cannot see the batch's size.
 */
describe('the outcome write under statistics that miss a backlog', () => {
  let t: TestApp;
  let outcomes: Outcome[];

  beforeAll(async () => {
    t = await startTestApp();
    const { id: endpointId } = await addEndpoint(t, 'https://receiver.example/hook');
    const workspaceId = t.demo.workspaces[0].id;
    await t.ctx.db.query(
      `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, attempt, next_attempt_at, created_at)
       SELECT 'whd_' || lpad(g::text, 26, '0'), $1, $2, 'evt_' || lpad(g::text, 26, '0'), 'product.created', 'success', 1, NULL, $3
         FROM generate_series(1, $4::int) AS g`,
      [workspaceId, endpointId, t.clock.now(), PENDING],
    );
    await t.ctx.db.query('ANALYZE webhook_deliveries');
    await t.ctx.db.query(`UPDATE webhook_deliveries SET status = 'pending', attempt = 0, next_attempt_at = $1`, [t.clock.now()]);
    const rows = await t.ctx.db.query<{ id: string; attempt: number; next_attempt_at: Date }>('SELECT id, attempt, next_attempt_at FROM webhook_deliveries ORDER BY id LIMIT $1', [BATCH]);
    outcomes = rows.map((r) => successOf(r, endpointId, t.clock.now()));
  });
  afterAll(() => t?.close());

  /** The statement `write` sends, planned as a hold plans it: generic, once per connection. */
  async function genericPlan(write: (q: Queryable) => Promise<unknown>): Promise<PlanNode> {
    let sent: { sql: string; params: unknown[] } | null = null;
    await write({ query: async (sql, params = []) => ((sent = { sql, params }), []) });
    if (!sent) throw new Error('nothing was written');
    const { sql, params } = sent as { sql: string; params: unknown[] };
    return t.ctx.db.tx(async (q) => {
      await q.query(`SET LOCAL plan_cache_mode = force_generic_plan`);
      // Every parameter of the write is cast where it is used: its type is read from there.
      const types = params.map((_, i) => new RegExp(`\\$${i + 1}::([a-z]+(?:\\[\\])?)`).exec(sql)![1]);
      await q.query(`PREPARE outcome_write (${types.join(', ')}) AS ${sql}`);
      // EXECUTE takes no parameters of its own: the values go in as literals.
      const literal = (value: unknown, i: number) => (value === null ? `NULL::${types[i]}` : `'${String(value).replace(/'/g, "''")}'::${types[i]}`);
      const [row] = await q.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(`EXPLAIN (FORMAT JSON) EXECUTE outcome_write(${params.map(literal).join(', ')})`);
      await q.query('DEALLOCATE outcome_write');
      return row['QUERY PLAN'][0].Plan;
    });
  }

  it.each([
    ['rows under a hold', (q: Queryable) => writeHeldOutcomes(q, outcomes)],
    ['rows under a lease', (q: Queryable) => recordOutcomes({ db: q as Db, clock: t.clock, outbox: t.ctx.outbox }, outcomes)],
  ])('%s: each row is found by its primary key', async (_, write) => {
    const reads = readsOf(await genericPlan(write), 'webhook_deliveries');
    expect(reads.length).toBeGreaterThan(0);
    for (const node of reads) expect([node['Node Type'], node['Index Name']]).toEqual(['Index Scan', `${node['Relation Name']}_pkey`]);
  });

  it('writes the batch, and only the batch', async () => {
    await recordOutcomes({ db: t.ctx.db, clock: t.clock, outbox: t.ctx.outbox }, outcomes);
    const [counts] = await t.ctx.db.query<{ success: number; pending: number }>(
      `SELECT count(*) FILTER (WHERE status = 'success')::int AS success, count(*) FILTER (WHERE status = 'pending')::int AS pending FROM webhook_deliveries`,
    );
    expect(counts).toEqual({ success: BATCH, pending: PENDING - BATCH });
  });
});
