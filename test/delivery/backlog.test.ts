import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BacklogMoves, moveBacklogs, moveRows } from '../../src/engine/delivery/backlog.js';
import type { Queryable } from '../../src/db/db.js';
import { idTimePrefix } from '../../src/lib/ids.js';
import { ManualClock, startTestApp, type TestApp } from '../helpers/app.js';
import { addEndpoint } from '../helpers/delivery.js';

/** One endpoint's backlog moved; how many rows moved. */
async function moveBacklog(db: Queryable, endpointId: string, now: Date, after: Date, stepMs: number): Promise<number> {
  return (await moveBacklogs(db, now, [{ endpointId, after, stepMs }])).get(endpointId)?.length ?? 0;
}

/** An endpoint's due backlog moved behind its lane's horizon in one statement, on real PostgreSQL. */
describe('backlog moves', () => {
  let t: TestApp;
  let clock: ManualClock;
  let hung: string;
  let other: string;

  const rows = (endpointId: string) =>
    t.ctx.db.query<{ id: string; next_attempt_at: Date }>('SELECT id, next_attempt_at FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY id', [endpointId]);

  /** `count` pending rows of the endpoint, due at `due`, their ids in the order given. */
  async function seed(endpointId: string, count: number, due: Date, tag: string): Promise<void> {
    const at = clock.now();
    await t.ctx.db.query(
      `INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, payload, status, attempt, next_attempt_at, created_at)
       SELECT $1 || $2 || lpad(g::text, 15 - length($2), '0'), $3, $4, 'evt_x', 'product.created', '{}', 'pending', 0, $5, $6
         FROM generate_series(1, $7::int) g`,
      [idTimePrefix('whd', at), tag, t.demo.workspaces[0].id, endpointId, due, at, count],
    );
  }

  beforeAll(async () => {
    clock = new ManualClock();
    t = await startTestApp({ clock });
    hung = (await addEndpoint(t, 'https://hung.example.com/in')).id;
    other = (await addEndpoint(t, 'https://other.example.com/in')).id;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('moves the endpoint’s due rows behind the horizon, spaced in their due order, and nothing else', async () => {
    const now = clock.now();
    await seed(hung, 5, now, 'a');
    await seed(hung, 2, new Date(now.getTime() + 60_000), 'b');
    await seed(other, 3, now, 'c');
    const after = new Date(now.getTime() + 10_000);

    expect(await moveBacklog(t.ctx.db, hung, now, after, 250)).toBe(5);
    const moved = await rows(hung);
    expect(moved.slice(0, 5).map((r) => r.next_attempt_at.getTime() - after.getTime())).toEqual([250, 500, 750, 1000, 1250]);
    // Not due yet: left where it was, as a hand-off's lease would be.
    expect(moved.slice(5).map((r) => r.next_attempt_at.getTime())).toEqual([now.getTime() + 60_000, now.getTime() + 60_000]);
    expect((await rows(other)).map((r) => r.next_attempt_at.getTime())).toEqual([now.getTime(), now.getTime(), now.getTime()]);
    // Nothing is due of it any more: a second move finds nothing.
    expect(await moveBacklog(t.ctx.db, hung, now, after, 250)).toBe(0);
  });

  it('passes over rows a worker holds, which it will write itself', async () => {
    const now = clock.now();
    const held = await t.ctx.db.begin();
    try {
      const [{ id }] = await held.query<{ id: string }>('SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY id LIMIT 1 FOR UPDATE', [other]);
      expect(await moveBacklog(t.ctx.db, other, now, new Date(now.getTime() + 5_000), 100)).toBe(2);
      const after = await rows(other);
      expect(after.find((r) => r.id === id)!.next_attempt_at.getTime()).toBe(now.getTime());
      expect(after.filter((r) => r.id !== id).map((r) => r.next_attempt_at.getTime() - now.getTime())).toEqual([5_100, 5_200]);
    } finally {
      await held.rollback();
    }
  });

  it('moves several endpoints’ backlogs in one statement, each behind its own horizon', async () => {
    const now = clock.now();
    const a = (await addEndpoint(t, 'https://a.example.com/in')).id;
    const b = (await addEndpoint(t, 'https://b.example.com/in')).id;
    await seed(a, 3, now, 'd');
    await seed(b, 2, now, 'e');
    const moved = await moveBacklogs(t.ctx.db, now, [
      { endpointId: a, after: new Date(now.getTime() + 1_000), stepMs: 10 },
      { endpointId: b, after: new Date(now.getTime() + 2_000), stepMs: 20 },
    ]);
    // Each endpoint's rows as placed, in their new order.
    expect(moved.get(a)!.map((r) => r.at.getTime() - now.getTime())).toEqual([1_010, 1_020, 1_030]);
    expect(moved.get(b)!.map((r) => r.at.getTime() - now.getTime())).toEqual([2_020, 2_040]);
    expect((await rows(a)).map((r) => r.next_attempt_at.getTime() - now.getTime())).toEqual([1_010, 1_020, 1_030]);
    expect((await rows(b)).map((r) => r.next_attempt_at.getTime() - now.getTime())).toEqual([2_020, 2_040]);
  });

  it('runs the moves asked for together as one statement', async () => {
    const now = clock.now();
    const ids = [];
    for (const name of ['f', 'g', 'h']) {
      const id = (await addEndpoint(t, `https://${name}.example.com/in`)).id;
      await seed(id, 2, now, name);
      ids.push(id);
    }
    // The database itself, with its statements counted.
    let statements = 0;
    const counted: Queryable = { query: (sql, params) => (statements++, t.ctx.db.query(sql, params)) };
    const moves = new BacklogMoves(counted, (error) => {
      throw error;
    });
    const asked = ids.map((id, i) => moves.move(id, now, new Date(now.getTime() + 1_000 * (i + 1)), 5));
    expect((await Promise.all(asked)).map((placed) => placed.length)).toEqual([2, 2, 2]);
    expect(statements).toBe(1);
    expect((await rows(ids[2])).map((r) => r.next_attempt_at.getTime() - now.getTime())).toEqual([3_005, 3_010]);
  });

  it('moves rows placed earlier again, only those still holding the time they were given and not locked', async () => {
    const now = clock.now();
    const id = (await addEndpoint(t, 'https://placed.example.com/in')).id;
    await seed(id, 4, now, 'p');
    const [placed] = (await moveBacklogs(t.ctx.db, now, [{ endpointId: id, after: new Date(now.getTime() + 1_000), stepMs: 10 }])).values();
    expect(placed.map((r) => r.at.getTime() - now.getTime())).toEqual([1_010, 1_020, 1_030, 1_040]);
    // Since placed: the first claimed and given a lease, the second locked by a worker's hold.
    const lease = new Date(now.getTime() + 60_000);
    await t.ctx.db.query('UPDATE webhook_deliveries SET next_attempt_at = $2 WHERE id = $1', [placed[0].id, lease]);
    const held = await t.ctx.db.begin();
    try {
      await held.query('SELECT id FROM webhook_deliveries WHERE id = $1 FOR UPDATE', [placed[1].id]);
      const later = placed.map((r, i) => ({ ...r, later: new Date(now.getTime() + 10_000 + (i + 1) * 1_000) }));
      expect(await moveRows(t.ctx.db, now, later)).toBe(2);
    } finally {
      await held.rollback();
    }
    const after = new Map((await rows(id)).map((r) => [r.id, r.next_attempt_at.getTime() - now.getTime()]));
    expect(placed.map((r) => after.get(r.id))).toEqual([60_000, 1_020, 13_000, 14_000]);
    // Come due, a row is the claims' again: moved no more.
    const due = { id: placed[3].id, at: new Date(now.getTime() + 14_000), later: new Date(now.getTime() + 30_000) };
    expect(await moveRows(t.ctx.db, new Date(now.getTime() + 20_000), [due])).toBe(0);
  });
});
