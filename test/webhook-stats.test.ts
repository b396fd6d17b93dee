import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRollup } from '../src/webhooks/attempts/rollup.js';
import { ManualClock, pathOf, startTestApp, type TestApp } from './helpers/app.js';
import { expectError, ok } from './helpers/expect.js';
import { statsOf, type KnownAttempt, type Stats } from './helpers/stats.js';
import { newId } from '../src/lib/ids.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** An endpoint's statistics from a known set of attempts, on the injected clock. */
describe('endpoint statistics', () => {
  let t: TestApp;
  let key: string;
  let endpointId: string;
  let otherEndpointId: string;
  const now = Date.parse('2026-01-01T10:02:30.000Z');
  const clock = new ManualClock(now);
  const known: KnownAttempt[] = [];

  const insert = async (endpoint: string, rows: KnownAttempt[]) => {
    for (const row of rows) {
      await t.ctx.db.query(
        `INSERT INTO webhook_delivery_attempts (delivery_id, attempt, workspace_id, endpoint_id, started_at, ok, response_status, response_time_ms, error)
         VALUES ($1, 1, $2, $3, $4, $5, $6, $7, $8)`,
        [
          newId('whd', new Date(row.at)),
          t.demo.workspaces[0].id,
          endpoint,
          new Date(row.at),
          row.ok,
          row.ok ? 200 : row.ms === null ? null : 500,
          row.ms,
          row.ok ? null : 'HTTP 500',
        ],
      );
    }
  };
  const stats = async (query = '', id = endpointId, token = key): Promise<Stats> => {
    const res = await t.call(token, 'GET', `/v1/webhooks/endpoints/${id}/stats${query}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  /** The percentiles as PostgreSQL's percentile_disc computes them over the rows themselves. */
  const percentileDisc = async (id: string, start: string, end: string) => {
    const [row] = await t.ctx.db.query<{ p: number[] | null }>(
      `SELECT percentile_disc(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY response_time_ms) AS p
         FROM webhook_delivery_attempts WHERE endpoint_id = $1 AND started_at >= $2 AND started_at < $3`,
      [id, start, end],
    );
    const [p50, p95, p99] = row.p ?? [null, null, null];
    return { p50, p95, p99 };
  };

  beforeAll(async () => {
    t = await startTestApp({ clock });
    key = t.demo.workspaces[0].apiKey;
    const create = async () => (await t.call(key, 'POST', '/v1/webhooks/endpoints', { url: 'https://hooks.example.com/in', subscribedEvents: ['product.*'] })).json().id;
    endpointId = await create();
    otherEndpointId = await create();

    // The last hour's window at 10:02:30 is [09:05, 10:05): 100 attempts taking 1..100 ms spread
    // over its 12 buckets, every fourth a failure; a failure without a response time; and
    // attempts just outside it, and out of the day's and the week's windows.
    const hourStart = Date.parse('2026-01-01T09:05:00.000Z');
    for (let i = 1; i <= 100; i++) known.push({ at: hourStart + (i % 12) * 5 * MINUTE + i * 1000, ok: i % 4 !== 0, ms: i });
    known.push({ at: hourStart, ok: true, ms: 7 });
    known.push({ at: Date.parse('2026-01-01T10:02:00.000Z'), ok: false, ms: null });
    known.push({ at: hourStart - 1, ok: false, ms: 5000 });
    known.push({ at: Date.parse('2026-01-01T10:05:00.000Z'), ok: true, ms: 1 });
    known.push({ at: Date.parse('2025-12-31T11:00:00.000Z'), ok: true, ms: 3 });
    known.push({ at: Date.parse('2025-12-31T10:59:59.999Z'), ok: false, ms: 4 });
    known.push({ at: Date.parse('2025-12-25T12:00:00.000Z'), ok: true, ms: 2 });
    known.push({ at: Date.parse('2025-12-25T11:59:59.999Z'), ok: true, ms: 2 });
    await insert(endpointId, known);
    await insert(otherEndpointId, [{ at: now - MINUTE, ok: false, ms: 9000 }]);
  });
  afterAll(() => t.close());

  it('counts, rates and percentiles the last hour in twelve 5-minute buckets', async () => {
    const hour = await stats('?window=1h');
    expect(hour).toEqual(statsOf('1h', Date.parse('2026-01-01T09:05:00.000Z'), Date.parse('2026-01-01T10:05:00.000Z'), 5 * MINUTE, known));
    // The numbers themselves, not only as the test's model computes them.
    expect(hour).toMatchObject({ attempts: 102, successes: 76, failures: 26, latencyMs: { p50: 50, p95: 95, p99: 99 } });
    expect(hour.successRate).toBeCloseTo(76 / 102, 10);
    expect(hour.series).toHaveLength(12);
    expect(hour.series[0]).toEqual({ start: '2026-01-01T09:05:00.000Z', successes: 1, failures: 8 });
    expect(hour.series.at(-1)!.start).toBe('2026-01-01T10:00:00.000Z');
    expect(hour.latencyMs).toEqual(await percentileDisc(endpointId, '2026-01-01T09:05:00.000Z', '2026-01-01T10:05:00.000Z'));
  });

  it('covers the day in 24 hourly buckets and the week in 28 buckets of 6 hours, aligned to UTC', async () => {
    const day = await stats('?window=24h');
    expect(day).toEqual(statsOf('24h', Date.parse('2025-12-31T11:00:00.000Z'), Date.parse('2026-01-01T11:00:00.000Z'), HOUR, known));
    expect(day.attempts).toBe(105);
    expect(day.series).toHaveLength(24);
    // The default window is the day.
    expect(await stats()).toEqual(day);

    const week = await stats('?window=7d');
    expect(week).toEqual(statsOf('7d', Date.parse('2025-12-25T12:00:00.000Z'), Date.parse('2026-01-01T12:00:00.000Z'), 6 * HOUR, known));
    expect(week.attempts).toBe(107);
    expect(week.series).toHaveLength(28);
    expect(week.series[0]).toEqual({ start: '2025-12-25T12:00:00.000Z', successes: 1, failures: 0 });
    expect(day.latencyMs).toEqual(await percentileDisc(endpointId, '2025-12-31T11:00:00.000Z', '2026-01-01T11:00:00.000Z'));
    expect(week.latencyMs).toEqual(await percentileDisc(endpointId, '2025-12-25T12:00:00.000Z', '2026-01-01T12:00:00.000Z'));
  });

  it('takes percentiles exactly as percentile_disc does, ties and round positions included', async () => {
    const create = async () => (await t.call(key, 'POST', '/v1/webhooks/endpoints', { url: 'https://hooks.example.com/p', subscribedEvents: ['product.*'] })).json().id;
    // n = 100 and n = 20 put p * n on whole positions; repeated values and a skewed tail around them.
    const sets = [
      Array.from({ length: 100 }, (_, i) => i + 1),
      Array.from({ length: 20 }, (_, i) => (i < 10 ? 3 : i < 19 ? 8 : 900)),
      [42],
      Array.from({ length: 37 }, (_, i) => (i * 7919) % 101),
    ];
    for (const values of sets) {
      const id = await create();
      await insert(id, values.map((ms, i) => ({ at: now - (i % 50) * 1000, ok: i % 3 !== 0, ms })));
      const got = await stats('?window=1h', id);
      expect(got.latencyMs).toEqual(await percentileDisc(id, '2026-01-01T09:05:00.000Z', '2026-01-01T10:05:00.000Z'));
      expect(got.attempts).toBe(values.length);
    }
  });

  it('moves with the clock: the same attempts an hour later leave the last hour', async () => {
    clock.set(new Date(now + HOUR));
    try {
      const hour = await stats('?window=1h');
      // [10:05, 11:05): only the attempt at 10:05:00.
      expect(hour).toMatchObject({ attempts: 1, successes: 1, failures: 0, successRate: 1, latencyMs: { p50: 1, p95: 1, p99: 1 } });
      expect(hour.series[0]).toEqual({ start: '2026-01-01T10:05:00.000Z', successes: 1, failures: 0 });
    } finally {
      clock.set(new Date(now));
    }
  });

  it('answers zeros, a null rate and null percentiles, and every bucket, for an endpoint without attempts', async () => {
    const quiet = (await t.call(key, 'POST', '/v1/webhooks/endpoints', { url: 'https://hooks.example.com/quiet', subscribedEvents: ['product.*'] })).json().id;
    const none = await stats('?window=1h', quiet);
    expect(none).toMatchObject({ window: '1h', attempts: 0, successes: 0, failures: 0, successRate: null, latencyMs: { p50: null, p95: null, p99: null } });
    expect(none.series).toHaveLength(12);
    expect(none.series.every((b) => b.successes === 0 && b.failures === 0)).toBe(true);
  });

  it("expand=stats gives each endpoint of a list page its last 24 hours, as the stats route does, on every page", async () => {
    type Listed = { id: string; stats?: Stats };
    const page = async (url: string) => ok<{ data: Listed[]; nextPageUrl: string | null }>(await t.call(key, 'GET', url));
    const plain = await page('/v1/webhooks/endpoints?limit=100');
    expect(plain.data.length).toBeGreaterThanOrEqual(3);
    expect(plain.data.every((e) => !('stats' in e))).toBe(true);

    const seen: Listed[] = [];
    for (let url: string | null = '/v1/webhooks/endpoints?limit=2&expand=stats'; url; ) {
      const got = await page(url);
      seen.push(...got.data);
      url = got.nextPageUrl && pathOf(got.nextPageUrl);
      if (url) expect(url).toContain('expand=stats');
    }
    expect(seen.map((e) => e.id)).toEqual(plain.data.map((e) => e.id));
    for (const endpoint of seen) expect(endpoint.stats, endpoint.id).toEqual(await stats('?window=24h', endpoint.id));
    expect(seen.find((e) => e.id === endpointId)!.stats!.attempts).toBe(105);
    expect(seen.find((e) => e.id === otherEndpointId)!.stats).toMatchObject({ attempts: 1, failures: 1, latencyMs: { p50: 9000 } });

    const refused = expectError(await t.call(key, 'GET', '/v1/webhooks/endpoints?expand=health'), 400, 'VALIDATION');
    expect(refused.message).toContain('Available: stats.');
  });

  it('answers at both mounts, to readers, and 404 for another workspace, an unknown or a deleted endpoint', async () => {
    const ws = t.demo.workspaces[0];
    const inPath = await t.call(key, 'GET', `/v1/workspaces/${ws.id}/webhooks/endpoints/${endpointId}/stats?window=1h`);
    expect(inPath.json()).toEqual(await stats('?window=1h'));
    const viewer = t.demo.users.find((u) => u.role === 'viewer')!.token;
    const read = await t.call(viewer, 'GET', `/v1/webhooks/endpoints/${endpointId}/stats?window=1h`, undefined, { 'service-workspace-id': ws.id });
    expect(read.json()).toEqual(inPath.json());
    const other = t.demo.workspaces[1];
    expectError(await t.call(other.apiKey, 'GET', `/v1/webhooks/endpoints/${endpointId}/stats`), 404, 'NOT_FOUND');
    expectError(await t.call(other.apiKey, 'GET', `/v1/workspaces/${other.id}/webhooks/endpoints/${endpointId}/stats`), 404, 'NOT_FOUND');
    expectError(await t.call(other.apiKey, 'GET', `/v1/workspaces/${ws.id}/webhooks/endpoints/${endpointId}/stats`), 403, 'FORBIDDEN');
    expectError(await t.call(key, 'GET', '/v1/webhooks/endpoints/whe_00000000000000000000000000/stats'), 404, 'NOT_FOUND');
    expectError(await t.call(key, 'GET', '/v1/webhooks/endpoints/nope/stats'), 404, 'NOT_FOUND');
    await t.call(key, 'DELETE', `/v1/webhooks/endpoints/${otherEndpointId}`);
    expectError(await t.call(key, 'GET', `/v1/webhooks/endpoints/${otherEndpointId}/stats`), 404, 'NOT_FOUND');
  });

  it('answers the same once the attempts are rolled up: counts and series exact, the day and the week within 1/32', async () => {
    // At 10:02:30 the rollup counts up to 09:55 (the last hour's 5-minute level, the day's hourly
    // level, the week's 6-hour level); the attempts since are read as they are.
    await runRollup(t.ctx);
    const windows = [
      ['1h', '2026-01-01T09:05:00.000Z', '2026-01-01T10:05:00.000Z', 5 * MINUTE],
      ['24h', '2025-12-31T11:00:00.000Z', '2026-01-01T11:00:00.000Z', HOUR],
      ['7d', '2025-12-25T12:00:00.000Z', '2026-01-01T12:00:00.000Z', 6 * HOUR],
    ] as const;
    for (const [window, start, end, bucket] of windows) {
      const got = await stats(`?window=${window}`);
      const want = statsOf(window, Date.parse(start), Date.parse(end), bucket, known);
      // The last hour's times are below 100 ms, which its 5-minute level keeps exact.
      if (window === '1h') expect(got).toEqual(want);
      expect({ ...got, latencyMs: null }).toEqual({ ...want, latencyMs: null });
      for (const p of ['p50', 'p95', 'p99'] as const) expect(Math.abs(got.latencyMs[p]! - want.latencyMs[p]!)).toBeLessThanOrEqual(want.latencyMs[p]! / 32);
    }
  });

  it('refuses a window it does not know', async () => {
    for (const query of ['?window=2h', '?window=', '?window=1H', '?window=24h&window=7d', '?limit=5']) {
      expectError(await t.call(key, 'GET', `/v1/webhooks/endpoints/${endpointId}/stats${query}`), 400, 'VALIDATION');
    }
  });
});
