import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, pathOf, type TestApp } from './helpers/app.js';
import { deliveryCalls, startDeliveries, type Delivery } from './helpers/delivery-list.js';
import { expectError } from './helpers/expect.js';
import { EVENT_TYPES } from '../src/engine/log/catalog.js';

const LIST_FIELDS = [
  'id', 'endpointId', 'eventId', 'eventType', 'workspaceId', 'status', 'attempt', 'createdAt',
  'deliveredAt', 'error', 'responseStatus', 'responseTimeMs', 'replayOf',
].sort();

/** The deliveries of startDeliveries (test/helpers/delivery-list.ts), listed, filtered and paged. */
describe('webhook deliveries', () => {
  let t: TestApp;
  let key: string;
  let a: string;
  let b: string;
  let all: Delivery[];
  const clock = new ManualClock();

  const { list, ids } = deliveryCalls(() => t, () => key);

  beforeAll(async () => {
    ({ t, key, a, b, all } = await startDeliveries(clock));
  });
  afterAll(() => t.close());

  it('lists every delivery newest first with the list fields only', async () => {
    expect(all).toHaveLength(7);
    expect(Object.keys(all[0]).sort()).toEqual(LIST_FIELDS);
    expect(all[0]).toMatchObject({ endpointId: a, eventType: 'product.updated', status: 'pending', attempt: 0, workspaceId: t.demo.workspaces[0].id });
    expect(all[0]).toMatchObject({ deliveredAt: null, error: null, responseStatus: null, responseTimeMs: null, replayOf: null });
    const times = all.map((d) => d.createdAt);
    expect([...times].sort().reverse()).toEqual(times);
  });

  it('filters by endpoint, status and event type', async () => {
    expect((await list(`?endpointId=${a}`)).data.every((d) => d.endpointId === a)).toBe(true);
    expect((await list(`?endpointId=${a}`)).data).toHaveLength(4);
    expect((await list(`?endpointId=${b}`)).data).toHaveLength(3);
    expect(ids((await list('?eventType=product.updated')).data)).toEqual([all[0].id]);
    // A type outside the catalog is refused, naming the catalog, rather than answered with nothing.
    const unknown = expectError(await t.call(key, 'GET', '/v1/webhooks/deliveries?eventType=product'), 400, 'VALIDATION');
    expect(unknown.message).toBe(`Invalid query: query.eventType: must be one of: ${EVENT_TYPES.join(', ')}.`);

    const [done, failed] = [all[1].id, all[2].id];
    await t.ctx.db.query("UPDATE webhook_deliveries SET status = 'success', attempt = 1, delivered_at = created_at WHERE id = $1", [done]);
    await t.ctx.db.query("UPDATE webhook_deliveries SET status = 'failed', attempt = 11, next_attempt_at = NULL WHERE id = $1", [failed]);
    expect(ids((await list('?status=success')).data)).toEqual([done]);
    expect(ids((await list('?status=failed')).data)).toEqual([failed]);
    expect((await list('?status=pending')).data).toHaveLength(5);
    expect((await list('?status=disabled')).data).toHaveLength(0);
    expect(ids((await list(`?status=pending&endpointId=${b}&eventType=product.created`)).data)).toEqual(
      all.filter((d) => d.endpointId === b && ![done, failed].includes(d.id)).map((d) => d.id),
    );
    await t.ctx.db.query("UPDATE webhook_deliveries SET status = 'pending', attempt = 0, delivered_at = NULL, next_attempt_at = created_at WHERE id IN ($1, $2)", [done, failed]);
  });

  it('lists the final failures of an endpoint and of the workspace, page by page', async () => {
    // Failed and disabled rows are read through partial indexes of their own (migrations/013).
    const ofA = all.filter((d) => d.endpointId === a);
    const [newer, older, gone] = [ofA[0].id, ofA[2].id, ofA[1].id];
    await t.ctx.db.query("UPDATE webhook_deliveries SET status = 'failed', attempt = 11, next_attempt_at = NULL WHERE id IN ($1, $2)", [newer, older]);
    await t.ctx.db.query("UPDATE webhook_deliveries SET status = 'disabled', next_attempt_at = NULL WHERE id = $1", [gone]);
    const walk = async (query: string) => {
      const seen: string[] = [];
      for (let page = await list(query); ; page = await list(pathOf(page.nextPageUrl!).replace('/v1/webhooks/deliveries', ''))) {
        seen.push(...ids(page.data));
        if (!page.nextPageUrl) return seen;
      }
    };
    expect(await walk(`?endpointId=${a}&status=failed&limit=1`)).toEqual([newer, older]);
    expect(await walk(`?endpointId=${a}&status=disabled&limit=1`)).toEqual([gone]);
    expect(await walk(`?endpointId=${b}&status=failed&limit=1`)).toEqual([]);
    expect(await walk('?status=failed&limit=1')).toEqual([newer, older]);
    expect(await walk('?status=disabled&limit=1')).toEqual([gone]);
    expect(await walk(`?endpointId=${a}&status=pending&limit=1`)).toEqual(ofA.filter((d) => ![newer, older, gone].includes(d.id)).map((d) => d.id));
    await t.ctx.db.query("UPDATE webhook_deliveries SET status = 'pending', attempt = 0, next_attempt_at = created_at WHERE id IN ($1, $2, $3)", [newer, older, gone]);
  });

  it('filters by creation time, both bounds inclusive of a row’s own createdAt', async () => {
    const newest = all[0].createdAt;
    const oldest = all[all.length - 1].createdAt;
    expect((await list(`?createdGte=${newest}`)).data.map((d) => d.createdAt)).toEqual([newest]);
    expect((await list(`?createdLte=${oldest}`)).data.every((d) => d.createdAt === oldest)).toBe(true);
    expect((await list(`?createdLte=${oldest}`)).data).toHaveLength(2);
    const middle = all[3].createdAt;
    const between = (await list(`?createdGte=${middle}&createdLte=${middle}`)).data;
    expect(between.length).toBeGreaterThan(0);
    expect(between.every((d) => d.createdAt === middle)).toBe(true);
    const offset = new Date(Date.parse(newest) - 1).toISOString().replace('Z', '+00:00');
    expect((await list(`?createdGte=${encodeURIComponent(offset)}`)).data).toHaveLength(1);
    expect((await list(`?createdGte=${newest}&createdLte=${oldest}`)).data).toHaveLength(0);
  });

  it('paginates with filters carried in the page URLs and bound to the cursor', async () => {
    const first = await list(`?endpointId=${a}&limit=3`);
    expect(ids(first.data)).toEqual(ids(all.filter((d) => d.endpointId === a)).slice(0, 3));
    expect(first.nextPageUrl).toContain(`endpointId=${a}`);
    expect(first.nextPageUrl).toContain('limit=3');
    const second = await list(pathOf(first.nextPageUrl!).replace('/v1/webhooks/deliveries', ''));
    expect(ids(second.data)).toEqual(ids(all.filter((d) => d.endpointId === a)).slice(3));
    expect(second.nextPageUrl).toBeNull();
    const back = await list(pathOf(second.previousPageUrl!).replace('/v1/webhooks/deliveries', ''));
    expect(ids(back.data)).toEqual(ids(first.data));

    const next = new URL(first.nextPageUrl!);
    for (const [name, value] of [['endpointId', b], ['status', 'failed'], ['eventType', 'product.created'], ['createdGte', all[6].createdAt]]) {
      const changed = new URL(next);
      changed.searchParams.set(name, value);
      const res = await t.call(key, 'GET', changed.pathname + changed.search);
      expect(res.statusCode, name).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION');
    }
  });

  it('refuses malformed filters with VALIDATION', async () => {
    for (const query of [
      '?status=done',
      '?endpointId=whd_01jd3x00000000000000000000',
      '?endpointId=abc',
      '?eventId=abc',
      '?eventId=whd_01jd3x00000000000000000000',
      '?eventId=evt_01jd3x',
      '?eventId=evt_01JD3X00000000000000000000',
      `?eventId=evt_01jd3x00000000000000000000'--`,
      '?createdGte=yesterday',
      '?createdGte=2026-01-01',
      '?createdLte=2026-01-01T23:59:60Z',
      '?createdGte=0000-01-01T00:00:00Z',
      '?createdLte=9999-12-31T23:59:59-01:00',
      '?eventType=',
      '?colour=red',
      '?page=garbage',
      '?limit=101',
    ]) {
      const res = await t.call(key, 'GET', `/v1/webhooks/deliveries${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION');
    }
  });
});
