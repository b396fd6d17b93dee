import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReadCoalescer } from '../src/http/coalesce.js';
import { startTestApp, type TestApp } from './helpers/app.js';

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('ReadCoalescer', () => {
  it('runs a lone read at once and forgets the key when it ends', async () => {
    const reads = new ReadCoalescer();
    await expect(reads.run('k', async () => 'a')).resolves.toBe('a');
    expect(reads.size).toBe(0);
  });

  it('never joins a computation already started: later callers share the next one', async () => {
    const reads = new ReadCoalescer();
    const first = deferred<string>();
    const second = deferred<string>();
    const started: string[] = [];
    const a = reads.run('k', () => (started.push('a'), first.promise));
    const b = reads.run('k', () => (started.push('b'), second.promise));
    const c = reads.run('k', () => (started.push('c'), Promise.resolve('never')));
    const other = reads.run('other', async () => (started.push('other'), 'x'));
    expect(started).toEqual(['a', 'other']);

    first.resolve('one');
    await expect(a).resolves.toBe('one');
    await Promise.resolve();
    expect(started).toEqual(['a', 'other', 'b']);
    second.resolve('two');
    await expect(b).resolves.toBe('two');
    await expect(c).resolves.toBe('two');
    await expect(other).resolves.toBe('x');
    expect(reads.size).toBe(0);
  });

  it('gives a failure to the callers of that computation only', async () => {
    const reads = new ReadCoalescer();
    const first = deferred<string>();
    const a = reads.run('k', () => first.promise);
    const b = reads.run('k', async () => {
      throw new Error('boom');
    });
    const c = reads.run('k', async () => 'unused');
    first.resolve('ok');
    await expect(a).resolves.toBe('ok');
    await expect(b).rejects.toThrow('boom');
    await expect(c).rejects.toThrow('boom');
    await expect(reads.run('k', async () => 'after')).resolves.toBe('after');
    expect(reads.size).toBe(0);
  });

  it('turns a computation that throws synchronously into a rejection', async () => {
    const reads = new ReadCoalescer();
    await expect(
      reads.run('k', () => {
        throw new Error('sync');
      }),
    ).rejects.toThrow('sync');
    expect(reads.size).toBe(0);
  });
});

describe('coalesced list reads', () => {
  let t: TestApp;
  let key: string;
  const listQueries: string[] = [];
  /** Holds each list query's rows this long after the query ran, as a slow network would. */
  let holdMs = 0;
  beforeAll(async () => {
    t = await startTestApp({ config: { rateLimitApiKey: 1_000_000 } });
    key = t.demo.workspaces[0].apiKey;
    const query = t.ctx.db.query.bind(t.ctx.db);
    t.ctx.db.query = (async (sql: string, params?: unknown[]) => {
      if (!(/FROM products\b/.test(sql) && /ORDER BY/.test(sql))) return query(sql, params);
      listQueries.push(sql);
      const rows = await query(sql, params);
      if (holdMs > 0) await new Promise((resolve) => setTimeout(resolve, holdMs));
      return rows;
    }) as typeof t.ctx.db.query;
  });
  afterAll(() => t.close());

  it('answers identical requests in flight with one body from at most two queries', async () => {
    for (let i = 0; i < 3; i++) await t.call(key, 'POST', '/v1/products', { name: `Shared ${i}` });
    listQueries.length = 0;
    const answers = await Promise.all(Array.from({ length: 20 }, () => t.call(key, 'GET', '/v1/products?limit=2')));
    expect(answers.map((a) => a.statusCode)).toEqual(Array(20).fill(200));
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
    expect(answers[0].headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answers[0].json().data.map((p: { name: string }) => p.name)).toEqual(['Shared 2', 'Shared 1']);
    expect(answers[0].json().nextPageUrl).toContain('limit=2');
    expect(listQueries.length).toBeLessThanOrEqual(2);
    // Each request still gets its own id and rate-limit headers.
    expect(new Set(answers.map((a) => a.headers['request-id'])).size).toBe(20);
    expect(answers.every((a) => a.headers['ratelimit'] !== undefined)).toBe(true);
  });

  it('shows every write committed before a request arrived, however many identical reads are in flight', async () => {
    // Every list answer arrives 15 ms after its query ran, so a request almost always finds one in
    // flight that began before the write it must see.
    holdMs = 15;
    let stop = false;
    const background = Array.from({ length: 16 }, async () => {
      while (!stop) expect((await t.call(key, 'GET', '/v1/products?limit=5')).statusCode).toBe(200);
    });
    try {
      for (let i = 0; i < 15; i++) {
        const created = (await t.call(key, 'POST', '/v1/products', { name: `Fresh ${i}` })).json();
        const listed = (await t.call(key, 'GET', '/v1/products?limit=5')).json();
        expect(listed.data[0].id, `write ${i}`).toBe(created.id);
      }
    } finally {
      stop = true;
      holdMs = 0;
      await Promise.all(background);
    }
  });

  it('keeps workspaces and page URLs apart', async () => {
    const other = t.demo.workspaces[1];
    const [mine, theirs] = await Promise.all([t.call(key, 'GET', '/v1/products?limit=1'), t.call(other.apiKey, 'GET', '/v1/products?limit=1')]);
    expect(mine.json().data).toHaveLength(1);
    expect(theirs.json().data.map((p: { name: string }) => p.name)).not.toContain(mine.json().data[0].name);
    const wsPath = `/v1/workspaces/${t.demo.workspaces[0].id}/products?limit=1`;
    const [plain, scoped] = await Promise.all([t.call(key, 'GET', '/v1/products?limit=1'), t.call(key, 'GET', wsPath)]);
    expect(plain.json().nextPageUrl).toContain('/v1/products?');
    expect(scoped.json().nextPageUrl).toContain(`/v1/workspaces/${t.demo.workspaces[0].id}/products?`);
  });
});
