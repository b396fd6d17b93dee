import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, pathOf, startTestApp, type TestApp } from './helpers/app.js';
import { ok } from './helpers/expect.js';

/**
 * Walking a list to the end and back by its URLs, while rows are inserted
 * and deleted around the cursor, shows every row that exists when the walk passes its position, once,
 * newest first, and never a deleted one.
 */
describe('keyset walks', () => {
  const T0 = Date.parse('2026-03-01T00:00:00.000Z');
  const clock = new ManualClock(T0);
  let t: TestApp;
  let key: string;
  /** Every live product of the first workspace: id → createdAt. */
  const live = new Map<string, string>();
  const initial: string[] = [];

  const newestFirst = (ids: Iterable<string>, at: Map<string, string>) =>
    [...ids].sort((a, b) => (at.get(a)! === at.get(b)! ? (a < b ? 1 : -1) : at.get(a)! < at.get(b)! ? 1 : -1));
  const ids = (page: { data: { id: string }[] }) => page.data.map((p) => p.id);
  const follow = async (url: string) => ok(await t.call(key, 'GET', pathOf(url)));

  /** Creates a product; with `atMs`, at that moment (the clock goes back to where it was after). */
  async function create(atMs?: number): Promise<string> {
    const saved = clock.now();
    if (atMs !== undefined) clock.set(new Date(atMs));
    const product = ok(await t.call(key, 'POST', '/v1/products', { name: 'walk' }), 201);
    clock.set(saved);
    live.set(product.id, product.createdAt);
    return product.id;
  }
  async function remove(id: string): Promise<void> {
    ok(await t.call(key, 'DELETE', `/v1/products/${id}`));
    live.delete(id);
  }
  const timeOf = (id: string) => Date.parse(live.get(id)!);

  beforeAll(async () => {
    t = await startTestApp({ clock });
    key = t.demo.workspaces[0].apiKey;
    // Three products per second: runs of equal createdAt straddle page boundaries, so ids break ties.
    for (let i = 0; i < 250; i++) {
      if (i % 3 === 0) clock.advance(1000);
      initial.push(await create());
    }
    clock.advance(60_000);
  });
  afterAll(() => t.close());

  it('walks 250 products forward to the end and back to the start, with no duplicate and no gap, while rows change', async () => {
    const all = new Map(live);
    let page = ok(await t.call(key, 'GET', '/v1/products?limit=7'));
    expect(page.previousPageUrl).toBeNull();
    const forward = [...ids(page)];
    const inserted: string[] = [];
    const deletedUnseen: string[] = [];
    let newest = '';

    while (page.nextPageUrl) {
      expect(page.data).toHaveLength(7);
      if (forward.length === 35) {
        const order = newestFirst(live.keys(), live);
        const unseen = order.slice(order.indexOf(forward[forward.length - 1]) + 1);
        // Ahead of the cursor: newer than anything, so it belongs before the pages already read.
        newest = await create();
        // Behind the cursor, between two unseen rows and older than every row: both show up later.
        inserted.push(await create(timeOf(unseen[40]) - 500), await create(T0 - 10_000));
        // An unseen row deleted is skipped; the cursor row itself deleted changes nothing.
        deletedUnseen.push(unseen[3], unseen[100]);
        for (const id of [...deletedUnseen, forward[forward.length - 1]]) await remove(id);
      }
      page = await follow(page.nextPageUrl);
      forward.push(...ids(page));
    }
    expect(page.data.length).toBeGreaterThan(0);
    expect(page.data.length).toBeLessThanOrEqual(7);

    for (const id of inserted) all.set(id, live.get(id)!);
    const expectedForward = newestFirst(initial.filter((id) => !deletedUnseen.includes(id)).concat(inserted), all);
    expect(new Set(forward).size).toBe(forward.length);
    expect(forward).toEqual(expectedForward);
    expect(forward).not.toContain(newest);

    // Back from the last page: rows change again, now above the cursor.
    const pages: string[][] = [ids(page)];
    let steps = 0;
    while (page.previousPageUrl) {
      if (++steps === 10) {
        const order = newestFirst(live.keys(), live);
        const unseenAbove = order.slice(0, order.indexOf(pages[0][0]));
        await create(timeOf(unseenAbove[unseenAbove.length - 20]) + 250);
        await remove(unseenAbove[unseenAbove.length - 30]);
      }
      page = await follow(page.previousPageUrl);
      expect(page.nextPageUrl).not.toBeNull();
      pages.unshift(ids(page));
    }
    // Only the top page may be short: the insertions moved the page boundaries.
    for (const p of pages.slice(1, -1)) expect(p).toHaveLength(7);
    const backward = pages.flat();
    expect(new Set(backward).size).toBe(backward.length);
    expect(backward).toEqual(newestFirst(live.keys(), live));
    expect(backward[0]).toBe(newest);
  });

  it('leads back from a page emptied by deletions, to the rows before it', async () => {
    const first = ok(await t.call(key, 'GET', '/v1/products?limit=50'));
    const second = await follow(first.nextPageUrl);
    // Delete everything after the second page: its next page is now empty and the last one.
    const order = newestFirst(live.keys(), live);
    for (const id of order.slice(order.indexOf(second.data[49].id) + 1)) await remove(id);
    const empty = await follow(second.nextPageUrl);
    expect(empty).toMatchObject({ data: [], nextPageUrl: null });
    const back = await follow(empty.previousPageUrl);
    expect(ids(back)).toEqual(ids(second));
    expect(ids(await follow(back.previousPageUrl))).toEqual(ids(first));
    // Forward again from the page read backwards: still nothing after it.
    expect(ids(await follow(back.nextPageUrl))).toEqual([]);
  });

  it('walks events of one type with its filter, forward and back, against the stored log', async () => {
    const workspaceId = t.demo.workspaces[0].id;
    const stored = await t.ctx.db.query<{ id: string }>(
      "SELECT id FROM events WHERE workspace_id = $1 AND type = 'product.deleted' ORDER BY created_at DESC, id DESC",
      [workspaceId],
    );
    expect(stored.length).toBeGreaterThan(100);
    let page = ok(await t.call(key, 'GET', '/v1/events?type=product.deleted&limit=9'));
    const forward = [...page.data];
    while (page.nextPageUrl) {
      expect(Object.fromEntries(new URL(page.nextPageUrl).searchParams)).toMatchObject({ type: 'product.deleted', limit: '9' });
      page = await follow(page.nextPageUrl);
      forward.push(...page.data);
    }
    expect(forward.every((e: { type: string }) => e.type === 'product.deleted')).toBe(true);
    expect(forward.map((e: { id: string }) => e.id)).toEqual(stored.map((r) => r.id));

    const backward: string[] = ids(page);
    while (page.previousPageUrl) {
      expect(new URL(page.previousPageUrl).searchParams.get('type')).toBe('product.deleted');
      page = await follow(page.previousPageUrl);
      backward.unshift(...ids(page));
    }
    expect(backward).toEqual(stored.map((r) => r.id));
  });
});
