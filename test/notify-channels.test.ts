import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeApiKey } from '../src/api-keys/store.js';
import { REVOCATION_CHANNEL } from '../src/http/auth/cache.js';
import { channelSql, listenChannel } from '../src/db/channels.js';
import type { Db } from '../src/db/db.js';
import { openPostgres } from '../src/db/postgres.js';
import { EVENT_CHANNEL } from '../src/engine/log/channel.js';
import { DELIVERY_CHANNEL } from '../src/engine/delivery/handoff.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { POSTGRES_URL, asAdmin, openTestDb, type TestDb } from './helpers/db.js';
import { addEndpoint, createProduct, eventually } from './helpers/delivery.js';
import { TcpProxy } from './helpers/tcp-proxy.js';

const CHANNELS = [DELIVERY_CHANNEL, REVOCATION_CHANNEL, EVENT_CHANNEL];
const md5 = (s: string) => createHash('md5').update(s).digest('hex');

/** What each channel of a schema hears, by channel. */
async function record(db: Db): Promise<{ heard: Record<string, string[]>; stop(): Promise<void> }> {
  const heard: Record<string, string[]> = {};
  const stops: (() => Promise<void>)[] = [];
  for (const name of CHANNELS) {
    heard[name] = [];
    stops.push(await listenChannel(db, name, (payload) => heard[name].push(payload)));
  }
  return { heard, stop: async () => void (await Promise.all(stops.map((s) => s()))) };
}

describe('channel names per schema', () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await openTestDb();
  });
  afterAll(() => t.close());

  it('are the plain name in public, the name and the schema for a short plain schema, a hash for any other', async () => {
    const odd = 'Odd "schema" ✓';
    const schemas = ['public', 'tenant_a', 'x'.repeat(43), 'x'.repeat(44), odd];
    const names: Record<string, string[]> = {};
    // In a transaction rolled back: the schemas never outlive the test.
    await t.db
      .tx(async (q) => {
        for (const schema of schemas) {
          const quoted = `"${schema.replace(/"/g, '""')}"`;
          if (schema !== 'public') await q.query(`CREATE SCHEMA ${quoted}`);
          await q.query(`SET LOCAL search_path TO ${quoted}`);
          names[schema] = [];
          for (const name of CHANNELS) {
            const [{ channel }] = await q.query<{ channel: string }>(`SELECT ${channelSql(name)} AS channel`);
            // The server takes it as a channel (at most 63 bytes, else it refuses it).
            await q.query(`SELECT pg_notify(${channelSql(name)}, 'x')`);
            names[schema].push(channel);
          }
        }
        throw new Error('rollback');
      })
      .catch((error: Error) => expect(error.message).toBe('rollback'));

    expect(names.public).toEqual(['webhook_deliveries', 'credentials_revoked', 'svc_events']);
    expect(names.tenant_a).toEqual(['webhook_deliveries:tenant_a', 'credentials_revoked:tenant_a', 'svc_events:tenant_a']);
    // 'credentials_revoked:' and 43 letters are 63 bytes, the most a channel name holds; one more is hashed.
    const [x43, x44] = ['x'.repeat(43), 'x'.repeat(44)];
    expect(names[x43]).toEqual(CHANNELS.map((name) => `${name}:${x43}`));
    expect(names[x44]).toEqual([`webhook_deliveries:${x44}`, `credentials_revoked#${md5(x44).slice(0, 16)}`, `svc_events:${x44}`]);
    expect(names[odd]).toEqual(CHANNELS.map((name) => `${name}#${md5(odd).slice(0, 16)}`));
  });

  // A Db whose connections use a schema whose name is too long to be spelled out in a channel name.
  it('reach a listener under a hashed name', async () => {
    const schema = `t_${randomBytes(28).toString('hex')}`;
    await asAdmin((sql) => sql.unsafe(`CREATE SCHEMA ${schema}`));
    const db = await openPostgres({ url: POSTGRES_URL, schema, poolSize: 2 });
    const done = async () => {
      await db.close();
      await asAdmin((sql) => sql.unsafe(`DROP SCHEMA ${schema}`));
    };
    try {
      const heard: string[] = [];
      const stop = await listenChannel(db, EVENT_CHANNEL, (payload) => heard.push(payload));
      await db.query(`SELECT pg_notify(${channelSql(EVENT_CHANNEL)}, 'hello')`);
      await eventually(() => heard.includes('hello'));
      await stop();
    } finally {
      await done();
    }
  });
});

describe('a listener started while the database is down', () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await openTestDb();
  });
  afterAll(() => t.close());

  it('asks for its channel until the database answers, then listens and wakes its handler once', async () => {
    const proxy = new TcpProxy(Number(new URL(POSTGRES_URL).port || 5432));
    await proxy.start();
    await proxy.stop();
    const url = new URL(POSTGRES_URL);
    url.host = `127.0.0.1:${proxy.port}`;
    const db = await openPostgres({ url: url.toString(), schema: t.schema, poolSize: 2, timeouts: { connectMs: 1_000 } });
    try {
      const heard: string[] = [];
      // Resolves although the channel's name could not be asked: it keeps asking.
      const stop = await listenChannel(db, DELIVERY_CHANNEL, (payload) => heard.push(payload));
      expect(heard).toEqual([]);
      await proxy.start();
      // Woken once it listens (notifications may have been missed), then hears the schema's NOTIFYs.
      await eventually(() => heard.includes(''));
      await t.db.query(`SELECT pg_notify(${channelSql(DELIVERY_CHANNEL)}, 'after')`);
      await eventually(() => heard.includes('after'));
      await stop();
    } finally {
      await db.close();
      await proxy.stop();
    }
  });
});

// Two services on two schemas of one database.
describe('two services on two schemas of one database', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    a = await startTestApp();
    b = await startTestApp();
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  /** A product created (one delivery due, one event) and an API key revoked, in `t`'s schema. */
  async function write(t: TestApp): Promise<{ origin: string; workspace: string; revoked: string }> {
    await addEndpoint(t, 'https://receiver.test/hooks');
    await createProduct(t);
    const workspace = t.demo.workspaces[0].id;
    const [{ id }] = await t.ctx.db.query<{ id: string }>('SELECT id FROM api_keys WHERE workspace_id = $1 AND test', [workspace]);
    expect(await revokeApiKey(t.ctx.db, null, id, t.clock.now())).not.toBeNull();
    return { origin: t.ctx.link.origin, workspace, revoked: id };
  }

  /** Until `listener` has heard all three notifications of `wrote`. */
  const heardAll = (listener: Awaited<ReturnType<typeof record>>, wrote: Awaited<ReturnType<typeof write>>) =>
    eventually(
      () =>
        listener.heard[DELIVERY_CHANNEL].includes(wrote.origin) &&
        listener.heard[EVENT_CHANNEL].some((p) => p.endsWith(wrote.workspace)) &&
        listener.heard[REVOCATION_CHANNEL].includes(wrote.revoked),
    );

  it("wake their own listeners only: neither hears the other's writes", async () => {
    const inA = await record(a.ctx.db);
    const inB = await record(b.ctx.db);
    try {
      const wroteA = await write(a);
      await heardAll(inA, wroteA);
      // B's own writes come after A's through the one notification queue of the server: once B has
      // heard them, it would have heard A's before.
      const wroteB = await write(b);
      await heardAll(inB, wroteB);
      expect(inB.heard[DELIVERY_CHANNEL]).not.toContain(wroteA.origin);
      expect(inB.heard[EVENT_CHANNEL].filter((p) => p.includes(wroteA.workspace))).toEqual([]);
      expect(inB.heard[REVOCATION_CHANNEL]).not.toContain(wroteA.revoked);

      // The other way round, with a last notification of A's on each channel as the marker.
      for (const name of CHANNELS) await a.ctx.db.query(`SELECT pg_notify(${channelSql(name)}, 'marker')`);
      await eventually(() => CHANNELS.every((name) => inA.heard[name].includes('marker')));
      expect(inA.heard[DELIVERY_CHANNEL]).not.toContain(wroteB.origin);
      expect(inA.heard[EVENT_CHANNEL].filter((p) => p.includes(wroteB.workspace))).toEqual([]);
      expect(inA.heard[REVOCATION_CHANNEL]).not.toContain(wroteB.revoked);
    } finally {
      await inA.stop();
      await inB.stop();
    }
  });
});
