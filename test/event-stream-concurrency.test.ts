import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/server/app.js';
import type { AppContext } from '../src/server/context.js';
import { openPostgres } from '../src/db/postgres.js';
import { createContext } from '../src/server/runtime.js';
import { startTestApp, testConfig, type TestApp } from './helpers/app.js';
import { POSTGRES_URL } from './helpers/db.js';
import { listening, logOf } from './helpers/event-stream.js';
import { openSse } from './helpers/sse.js';

describe('event stream under concurrent writes, and across processes', () => {
  let t: TestApp;
  let second: { app: TestApp['app']; ctx: AppContext; close(): Promise<void> };
  let base: string;
  let secondBase: string;
  let key: string;
  let ws: string;

  beforeAll(async () => {
    t = await startTestApp({ config: { streamKeepAliveMs: 60_000, rateLimitApiKey: 1_000_000 } });
    base = await listening(t.app);
    key = t.demo.workspaces[0].apiKey;
    ws = t.demo.workspaces[0].id;
    // A second API process on the same database: its own connections, LISTEN and sequencer, and a
    // poll too rare to matter, so NOTIFY is what wakes it.
    const db = await openPostgres({ url: POSTGRES_URL, schema: t.testDb.schema, poolSize: 5 });
    const config = testConfig({ streamKeepAliveMs: 60_000, rateLimitApiKey: 1_000_000, pollIntervalMs: 60_000 });
    const ctx = createContext(config, db, randomBytes(32));
    const app = await buildApp(ctx);
    secondBase = await listening(app);
    second = {
      app,
      ctx,
      close: async () => {
        await app.close();
        await ctx.rateLimits.close();
        await db.close();
      },
    };
  });
  afterAll(async () => {
    await second.close();
    await t.close();
  });

  /** `count` products created and then renamed, over HTTP, `parallel` requests at a time, through `urls` in turn. */
  async function write(urls: string[], count: number, parallel: number): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < count) {
        const i = next++;
        const url = urls[i % urls.length];
        const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
        const created = await fetch(`${url}/v1/products`, { method: 'POST', headers, body: JSON.stringify({ name: `Load ${i}` }) });
        expect(created.status).toBe(201);
        const { id } = (await created.json()) as { id: string };
        const renamed = await fetch(`${url}/v1/products/${id}`, { method: 'PATCH', headers, body: JSON.stringify({ name: `Load ${i} renamed` }) });
        expect(renamed.status).toBe(200);
        await renamed.arrayBuffer();
      }
    };
    await Promise.all(Array.from({ length: parallel }, worker));
  }

  it('sends every event of concurrent writes once, in the log\'s order, across a reconnect in the middle of them', async () => {
    const auth = { authorization: `Bearer ${key}` };
    const steady = await openSse(`${base}/v1/events/stream`, auth);
    let hopping = await openSse(`${base}/v1/events/stream`, auth);
    const writing = write([base], 150, 16);
    const firstPart = (await hopping.waitFor(60, 60_000)).map((m) => m.id!);
    hopping.close();
    await new Promise((resolve) => setTimeout(resolve, 200));
    hopping = await openSse(`${base}/v1/events/stream`, { ...auth, 'last-event-id': firstPart[59] });
    await writing;
    const all = (await steady.waitFor(300, 60_000)).map((m) => m.id!);
    const secondPart = (await hopping.waitFor(240, 60_000)).map((m) => m.id!);
    steady.close();
    hopping.close();
    const log = await logOf(t, ws);
    const from = log.indexOf(all[0]);
    expect(all).toEqual(log.slice(from, from + 300));
    expect([...firstPart, ...secondPart]).toEqual(all);
  }, 120_000);

  it('sends a write of one process held by a row lock after the events another process committed meanwhile, once', async () => {
    const auth = { authorization: `Bearer ${key}` };
    const call = async (url: string, method: string, body: unknown) => {
      const res = await fetch(url, { method, headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(res.status).toBeLessThan(300);
      return (await res.json()) as { id: string };
    };
    const stream = await openSse(`${secondBase}/v1/events/stream`, auth);
    const held = (await call(`${base}/v1/products`, 'POST', { name: 'Held' })).id;
    const [createdHeld] = await stream.waitFor(1, 30_000);
    // Another transaction holds the product's row for 3 s: the rename through the first process
    // takes its time now, then waits; the second process creates products meanwhile.
    const blocker = await t.ctx.db.begin();
    await blocker.query('SELECT id FROM products WHERE id = $1 FOR UPDATE', [held]);
    const renaming = call(`${base}/v1/products/${held}`, 'PATCH', { name: 'Held, renamed' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const meanwhile = [(await call(`${secondBase}/v1/products`, 'POST', { name: 'Meanwhile 1' })).id, (await call(`${secondBase}/v1/products`, 'POST', { name: 'Meanwhile 2' })).id];
    // Sent live, without waiting for the held write.
    const live = await stream.waitFor(3, 30_000);
    expect(live.slice(1).map((m) => JSON.parse(m.data).subject.id)).toEqual(meanwhile);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(stream.messages).toHaveLength(3);
    await blocker.commit();
    await renaming;
    const updated = (await stream.waitFor(4, 30_000))[3];
    const body = JSON.parse(updated.data);
    expect(body).toMatchObject({ type: 'product.updated', subject: { id: held } });
    // Its time is before the others', its place in the log after them.
    expect(Date.parse(body.created)).toBeLessThan(Date.parse(JSON.parse(live[1].data).created));
    const log = await logOf(t, ws);
    const from = log.indexOf(createdHeld.id!);
    expect(log.slice(from, from + 4)).toEqual(stream.messages.map((m) => m.id));
    // Resumed from before it and from after it, on either process: nothing missed, nothing twice.
    const fromBefore = await openSse(`${base}/v1/events/stream`, { ...auth, 'last-event-id': live[2].id! });
    const fromAfter = await openSse(`${secondBase}/v1/events/stream`, { ...auth, 'last-event-id': updated.id! });
    const next = (await call(`${base}/v1/products`, 'POST', { name: 'After all' })).id;
    const [afterAll] = await fromAfter.waitFor(1, 30_000);
    expect(JSON.parse(afterAll.data).subject.id).toBe(next);
    expect((await fromBefore.waitFor(2, 30_000)).map((m) => m.id)).toEqual([updated.id, afterAll.id]);
    for (const client of [stream, fromBefore, fromAfter]) client.close();
  }, 60_000);

  it('follows the writes of 100 concurrent writers over two processes: every reader of either gets each event once, in the log\'s order', async () => {
    const auth = { authorization: `Bearer ${key}` };
    const stream = await openSse(`${secondBase}/v1/events/stream`, auth);
    const started = Date.now();
    // The other process writes alone first: its sequencer's NOTIFY, not a poll, brings the event.
    const res = await t.call(key, 'POST', '/v1/products', { name: 'From the first process' });
    const [first] = await stream.waitFor(1, 30_000);
    expect(JSON.parse(first.data).subject.id).toBe(res.json().id);
    expect(Date.now() - started).toBeLessThan(10_000);
    const readers = [stream, ...(await Promise.all([base, base, secondBase].map((url) => openSse(`${url}/v1/events/stream`, { ...auth, 'last-event-id': first.id! }))))];
    // Then 100 writers at once, through both processes.
    await write([base, secondBase], 200, 100);
    const received = await Promise.all(readers.map(async (reader) => (await reader.waitFor(reader === stream ? 401 : 400, 60_000)).map((m) => m.id!)));
    const log = await logOf(t, ws);
    const expected = log.slice(log.indexOf(first.id!) + 1, log.indexOf(first.id!) + 401);
    expect(expected).toHaveLength(400);
    for (const [i, reader] of readers.entries()) {
      expect(received[i].slice(reader === stream ? 1 : 0)).toEqual(expected);
      reader.close();
    }
    expect(second.ctx.eventStreams.size).toBeLessThanOrEqual(2);
  }, 120_000);
});
