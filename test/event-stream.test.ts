import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, userOf, type TestApp } from './helpers/app.js';
import { listening, logOf } from './helpers/event-stream.js';
import { ok } from './helpers/expect.js';
import { openSse, type SseClient } from './helpers/sse.js';

/** GET /v1/events/stream as Server-Sent Events. */
describe('event stream', () => {
  let t: TestApp;
  let base: string;
  let key: string;
  let ws1: string;
  const clients: SseClient[] = [];

  const open = async (path: string, headers: Record<string, string> = {}, token: string | null = key) => {
    const client = await openSse(`${base}${path}`, { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers });
    clients.push(client);
    return client;
  };
  const create = async (name: string, token = key) => ok(await t.call(token, 'POST', '/v1/products', { name }), 201).id as string;
  /** The workspace's events in the log's order. */
  const logged = (workspaceId = ws1) => logOf(t, workspaceId);

  beforeAll(async () => {
    t = await startTestApp({ config: { streamKeepAliveMs: 60_000, rateLimitApiKey: 1_000_000 } });
    base = await listening(t.app);
    key = t.demo.workspaces[0].apiKey;
    ws1 = t.demo.workspaces[0].id;
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });
  let stopped = false;
  afterAll(async () => {
    if (!stopped) return t.close();
    await t.ctx.rateLimits.close();
    await t.testDb.close();
  });

  it('sends each new event as id and data, the body byte for byte as GET /events/{id} serves it', async () => {
    const stream = await open('/v1/events/stream');
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(stream.headers['cache-control']).toBe('no-cache, no-transform');
    expect(stream.headers['request-id']).toMatch(/^req_/);
    const hat = await create('Hat');
    ok(await t.call(key, 'PATCH', `/v1/products/${hat}`, { name: 'Top hat' }));
    const [created, updated] = await stream.waitFor(2);
    for (const message of [created, updated]) {
      const stored = await t.call(key, 'GET', `/v1/events/${message.id}`);
      expect(message.data).toBe(stored.body);
    }
    expect(JSON.parse(created.data)).toMatchObject({ type: 'product.created', subject: { id: hat } });
    expect(JSON.parse(updated.data)).toMatchObject({ type: 'product.updated', subject: { id: hat } });
    // The frames as they are on the wire: a retry hint, then one `id:`/`data:` pair per event.
    expect(stream.raw).toBe(`retry: 1000\n\nid: ${created.id}\ndata: ${created.data}\n\nid: ${updated.id}\ndata: ${updated.data}\n\n`);
  });

  it('begins now without a resume point (an empty Last-Event-ID is none): nothing older comes', async () => {
    const before = await create('Before');
    const stream = await open('/v1/events/stream');
    const empty = await open('/v1/events/stream', { 'last-event-id': '' });
    const after = await create('After');
    for (const client of [stream, empty]) {
      const [first] = await client.waitFor(1);
      expect(JSON.parse(first.data).subject.id).toBe(after);
      expect(client.raw).not.toContain(before);
    }
  });

  it('filters by an exact type or a prefix pattern of the catalog', async () => {
    const deleted = await open('/v1/events/stream?type=product.deleted');
    const products = await open('/v1/events/stream?type=product.*');
    const pings = await open('/v1/events/stream?type=webhook.*');
    const hat = await create('Filtered hat');
    ok(await t.call(key, 'PATCH', `/v1/products/${hat}`, { name: 'Filtered cap' }));
    ok(await t.call(key, 'DELETE', `/v1/products/${hat}`));
    const all = await products.waitFor(3);
    expect(all.map((m) => JSON.parse(m.data).type)).toEqual(['product.created', 'product.updated', 'product.deleted']);
    const [only] = await deleted.waitFor(1);
    expect(only).toEqual(all[2]);
    await create('One more');
    await products.waitFor(4);
    expect(deleted.messages).toHaveLength(1);
    expect(pings.messages).toHaveLength(0);
  });

  it('refuses a type outside the catalog and a resume point that is not an event id', async () => {
    for (const [query, headers, path] of [
      ['?type=product.nope', {}, 'query.type'],
      ['?type=*', {}, 'query.type'],
      ['?after=prd_01jd3x0000000000000000000a', {}, 'query.after'],
      ['', { 'last-event-id': 'evt_nope' }, 'header.last-event-id'],
      ['?since=now', {}, 'query'],
    ] as const) {
      const res = await open(`/v1/events/stream${query}`, headers);
      expect(res.status, query).toBe(400);
      const body = JSON.parse(res.raw);
      expect(body.error.code).toBe('VALIDATION');
      if (path === 'query.type') expect(body.error.message).toContain('product.*');
      expect(JSON.stringify(body.error.details ?? body.error.message)).toContain(path === 'query' ? 'since' : path.split('.')[1]);
    }
  });

  it('resumes after Last-Event-ID (or ?after=) from the log: nothing missed, nothing twice', async () => {
    const first = await open('/v1/events/stream');
    for (let i = 0; i < 5; i++) await create(`Resume ${i}`);
    const received = (await first.waitFor(5)).map((m) => m.id!);
    const streamsBefore = t.ctx.eventStreams.size;
    first.close();
    // The client hung up: its stream ends on the server too.
    for (let i = 0; i < 200 && t.ctx.eventStreams.size === streamsBefore; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(t.ctx.eventStreams.size).toBe(streamsBefore - 1);
    // Written while no stream is open: a reconnect must replay them from the log, then go on live.
    for (let i = 5; i < 12; i++) await create(`Resume ${i}`);
    const again = await open('/v1/events/stream', { 'last-event-id': received[4] });
    await again.waitFor(7);
    await create('Resume live');
    const replayed = (await again.waitFor(8)).map((m) => m.id!);
    const log = await logged();
    const from = log.indexOf(received[0]);
    expect([...received, ...replayed]).toEqual(log.slice(from, from + 13));
    // The query parameter does the same; the header, which a reconnecting client sends, wins over it.
    const viaQuery = await open(`/v1/events/stream?after=${received[2]}`);
    expect((await viaQuery.waitFor(10)).map((m) => m.id)).toEqual(log.slice(from + 3, from + 13));
    const both = await open(`/v1/events/stream?after=${received[0]}`, { 'last-event-id': replayed[6] });
    expect((await both.waitFor(1)).map((m) => m.id)).toEqual([replayed[7]]);
  });

  it('refuses to resume after an event the workspace does not have (another workspace\'s, or none at all)', async () => {
    const other = t.demo.workspaces[1];
    await create('Elsewhere', other.apiKey);
    const [{ id: foreign }] = ok(await t.call(other.apiKey, 'GET', '/v1/events?limit=1')).data;
    for (const [path, headers] of [
      ['/v1/events/stream', { 'last-event-id': foreign }],
      [`/v1/events/stream?after=${foreign}`, {}],
      ['/v1/events/stream', { 'last-event-id': 'evt_01jd3x0000000000000000000a' }],
    ] as const) {
      const refused = await open(path, headers);
      expect(refused.status).toBe(400);
      expect(JSON.parse(refused.raw).error).toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('names no event of this workspace') });
      expect(refused.raw).not.toContain('Elsewhere');
    }
  });

  it('keeps workspaces apart: a stream sees its own workspace only, and never another\'s by path or header', async () => {
    const other = t.demo.workspaces[1];
    const mine = await open('/v1/events/stream');
    const theirs = await open('/v1/events/stream', {}, other.apiKey);
    const owner = userOf(t.demo, 'owner').token;
    const byPath = await open(`/v1/workspaces/${other.id}/events/stream`, {}, owner);
    const byHeader = await open('/v1/events/stream', { 'service-workspace-id': other.id }, owner);
    const p1 = await create('Only mine');
    const p2 = await create('Only theirs', other.apiKey);
    await mine.waitFor(1);
    for (const stream of [theirs, byPath, byHeader]) await stream.waitFor(1);
    expect(mine.messages.map((m) => JSON.parse(m.data).subject.id)).toEqual([p1]);
    for (const stream of [theirs, byPath, byHeader]) expect(stream.messages.map((m) => JSON.parse(m.data).subject.id)).toEqual([p2]);
    for (const stream of [theirs, byPath, byHeader]) expect(stream.raw).not.toContain(ws1);

    // Another workspace's credential, through the path or the header: 403, no stream.
    for (const [path, headers, token] of [
      [`/v1/workspaces/${ws1}/events/stream`, {}, other.apiKey],
      [`/v1/workspaces/${ws1}/events/stream`, {}, userOf(t.demo, 'outsider').token],
      ['/v1/events/stream', { 'service-workspace-id': ws1 }, userOf(t.demo, 'outsider').token],
    ] as const) {
      const refused = await open(path, headers, token);
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.raw).error.code).toBe('FORBIDDEN');
    }
  });

  it('needs a valid credential (401) with read access to the workspace\'s events (a viewer has it)', async () => {
    const none = await open('/v1/events/stream', {}, null);
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Bearer');
    const unknown = await open('/v1/events/stream', {}, 'svc_sk_' + 'A'.repeat(36));
    expect(unknown.status).toBe(401);
    const viewer = await open(`/v1/workspaces/${ws1}/events/stream`, {}, userOf(t.demo, 'viewer').token);
    expect(viewer.status).toBe(200);
    const id = await create('Seen by the viewer');
    expect(JSON.parse((await viewer.waitFor(1))[0].data).subject.id).toBe(id);
  });

  it('counts as one request against the rate limit, however many events it carries', async () => {
    const limited = ok(await t.call(userOf(t.demo, 'owner').token, 'POST', `/v1/workspaces/${ws1}/api-keys`, { name: 'limited' }), 201);
    const remaining = (header: unknown) => Number(/;r=(\d+);/.exec(String(header))![1]);
    const stream = await open('/v1/events/stream', {}, limited.key);
    const left = remaining(stream.headers.ratelimit);
    for (let i = 0; i < 3; i++) await create(`Counted ${i}`);
    await stream.waitFor(3);
    const next = await t.call(limited.key, 'GET', '/v1/events?limit=1');
    expect(remaining(next.headers.ratelimit)).toBe(left - 1);
  });

  it('is fed by one read of the log per wake-up, whatever the number of streams', async () => {
    const streams = await Promise.all(Array.from({ length: 20 }, () => open('/v1/events/stream')));
    const reads: string[] = [];
    const query = t.ctx.db.query.bind(t.ctx.db);
    t.ctx.db.query = ((sql: string, params?: unknown[]) => {
      if (sql.includes('FROM event_batches b') && sql.includes('ORDER BY b.position, x.n')) reads.push(sql);
      return query(sql, params);
    }) as typeof t.ctx.db.query;
    try {
      const id = await create('Fanned out');
      for (const stream of streams) expect(JSON.parse((await stream.waitFor(1))[0].data).subject.id).toBe(id);
    } finally {
      t.ctx.db.query = query;
    }
    expect(reads.length).toBeGreaterThanOrEqual(1);
    expect(reads.length).toBeLessThanOrEqual(2);
  });

  it('keeps a reader that does not read at a bounded buffer, and catches it up from the log, in order, each event once', async () => {
    // The stream's body, not yet read by anyone: as a client that has stopped reading.
    const stream = await t.ctx.eventStreams.open({ workspaceId: ws1, types: null, after: null, keepAliveMs: 60_000, stillAllowed: async () => true });
    const running = stream.run();
    try {
      // More events than the workspace's tail keeps (1,000), created together in batches.
      const created = await Promise.all(Array.from({ length: 3_000 }, (_, i) => t.ctx.productCreations.create(ws1, { name: `Burst ${i}` }, t.clock.now())));
      await new Promise((resolve) => setTimeout(resolve, 300));
      // Waiting: one buffer's worth (16 KiB) and the write that filled it (about 16 KiB of events),
      // not 3,000 events.
      expect(stream.out.body.writableLength).toBeLessThan(40 * 1024);
      let text = '';
      let count = 0;
      for await (const chunk of stream.out.body) {
        text += chunk;
        count += String(chunk).split('\ndata: ').length - 1;
        if (count >= 3_000) break;
      }
      const ids = [...text.matchAll(/^id: (evt_\w+)$/gm)].map((m) => m[1]);
      const log = await logged();
      const from = log.indexOf(ids[0]);
      expect(ids).toEqual(log.slice(from, from + 3_000));
      const subjects = [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]).subject.id);
      expect(new Set(subjects)).toEqual(new Set(created.map((p) => p.id)));
    } finally {
      stream.close();
      await running;
    }
  });

  it('sends a keep-alive comment every SVC_STREAM_KEEPALIVE, and ends at the next one once the credential is revoked', async () => {
    const owner = userOf(t.demo, 'owner').token;
    const revoked = ok(await t.call(owner, 'POST', `/v1/workspaces/${ws1}/api-keys`, { name: 'to revoke' }), 201);
    t.ctx.config.streamKeepAliveMs = 50;
    let stream: SseClient;
    try {
      stream = await open('/v1/events/stream', {}, revoked.key);
    } finally {
      t.ctx.config.streamKeepAliveMs = 60_000;
    }
    await stream.waitForComments(2);
    expect(stream.comments.slice(0, 3)).toEqual(['keep-alive', 'keep-alive', 'keep-alive']);
    expect(stream.raw).toMatch(/^retry: 1000\n\n(: keep-alive\n\n){3}/);
    const before = t.ctx.eventStreams.size;
    ok(await t.call(owner, 'DELETE', `/v1/workspaces/${ws1}/api-keys/${revoked.id}`));
    await stream.ended;
    expect(t.ctx.eventStreams.size).toBe(before - 1);
  });

  // Last: it stops the server.
  it('ends every open stream when the server stops, without waiting for them', async () => {
    const streams = await Promise.all([key, t.demo.workspaces[1].apiKey, key].map((token) => open('/v1/events/stream', {}, token)));
    expect(t.ctx.eventStreams.size).toBe(3);
    const started = Date.now();
    stopped = true;
    await t.app.close();
    await Promise.all(streams.map((s) => s.ended));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(t.ctx.eventStreams.size).toBe(0);
  });
});
