import { mkdtemp, readdir, readFile, rm, truncate } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensurePartitions, listPartitions, PARTITIONED } from '../src/db/partitions.js';
import { ManualClock } from '../src/lib/clock.js';
import { listArchives, openArchive, restoreArchive } from '../src/server/archive.js';
import { runRetention } from '../src/server/retention.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { addEndpoint, createProduct } from './helpers/delivery.js';

const MINUTE = 60_000;
const DAY = 86_400_000;

/** Time partitions of the hot tables: made ahead, pruned by id, retired whole with their work kept, archived and restored. */
describe('partitions', () => {
  let t: TestApp;
  let clock: ManualClock;
  let dir: string;
  let key: string;
  let endpoint: { id: string; secret: string };

  const names = async (table: string) => (await listPartitions(t.ctx.db, table)).map((p) => p.name);
  const deliveries = () => t.ctx.db.query<{ id: string; event_id: string; status: string }>('SELECT id, event_id, status FROM webhook_deliveries ORDER BY id');

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-archive-'));
    // The history partition of a fresh schema reaches a day past now: start beyond it.
    clock = new ManualClock(Math.floor(Date.now() / MINUTE) * MINUTE + 2 * DAY);
    t = await startTestApp({ clock, config: { partitionWidthMs: MINUTE, retentionMs: 5 * MINUTE, archiveDir: dir } });
    key = t.demo.workspaces[0].apiKey;
    endpoint = await addEndpoint(t, 'https://hooks.example.com/in');
  });
  afterAll(async () => {
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('makes partitions ahead, across a jump of the clock, and any number of processes may do it at once', async () => {
    const made = await Promise.all([0, 1, 2].map(() => ensurePartitions(t.ctx.db, clock.now(), MINUTE)));
    // One gap partition from the history's end to this minute, then this minute and two ahead, in each table.
    expect(made.flat()).toHaveLength(3 * 4);
    for (const { table } of PARTITIONED) {
      const list = await listPartitions(t.ctx.db, table);
      expect(list[0].name).toBe(`${table}_history`);
      expect(list.at(-1)!.to).toBe(clock.now().getTime() + 3 * MINUTE);
      for (let i = 1; i < list.length; i++) expect(list[i].from).toBe(list[i - 1].to);
    }
    expect(await ensurePartitions(t.ctx.db, clock.now(), MINUTE)).toEqual([]);

    // The clock jumps ten days: one partition for the gap, not fourteen thousand.
    const before = (await names('events')).length;
    clock.advance(10 * DAY);
    expect(await ensurePartitions(t.ctx.db, clock.now(), MINUTE)).toHaveLength(3 * 4);
    expect((await names('events')).length).toBe(before + 4);
    await createProduct(t, 'After the jump');
    expect(await deliveries()).toHaveLength(1);
  });

  it('reaches one partition for a look-up by id', async () => {
    const [row] = await deliveries();
    for (const [table, column, id] of [['webhook_deliveries', 'id', row.id], ['events', 'id', row.event_id], ['webhook_delivery_attempts', 'delivery_id', row.id]]) {
      const plan = (await t.ctx.db.query<{ 'QUERY PLAN': string }>(`EXPLAIN SELECT * FROM ${table} WHERE ${column} = $1`, [id])).map((r) => r['QUERY PLAN']).join('\n');
      const scanned = (await names(table)).filter((name) => new RegExp(`\\b${name}\\b`).test(plan));
      expect(scanned, plan).toHaveLength(1);
    }
    // The claim walks the pending-rows index of each partition, never a table.
    const claim = (
      await t.ctx.db.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= $1 ORDER BY next_attempt_at, id LIMIT 10 FOR UPDATE SKIP LOCKED`,
        [clock.now()],
      )
    ).map((r) => r['QUERY PLAN']).join('\n');
    expect(claim, claim).not.toMatch(/Seq Scan|-> +Sort/);
    expect(claim.match(/Index Scan using \S+ on (\S+)/g)).toHaveLength((await names('webhook_deliveries')).length);
  });

  it('retires whole partitions past the retention, keeps those with work, archives them, in two processes at once', async () => {
    // Minute 1: a delivery that stays pending. Minutes 2-3: deliveries that finish.
    clock.advance(MINUTE);
    await createProduct(t, 'Pending');
    const pending = (await deliveries()).at(-1)!;
    for (const name of ['Done 1', 'Done 2']) {
      clock.advance(MINUTE);
      await ensurePartitions(t.ctx.db, clock.now(), MINUTE);
      await createProduct(t, name);
    }
    await t.ctx.db.query(`UPDATE webhook_deliveries SET status = 'success', next_attempt_at = NULL WHERE id <> $1`, [pending.id]);
    await t.ctx.db.query(
      `INSERT INTO webhook_delivery_attempts (delivery_id, attempt, workspace_id, endpoint_id, started_at, ok, response_status)
       SELECT id, 1, workspace_id, endpoint_id, created_at, true, 200 FROM webhook_deliveries`,
    );
    const all = await deliveries();
    clock.advance(10 * MINUTE);
    await ensurePartitions(t.ctx.db, clock.now(), MINUTE);

    // Two processes at once; a range one of them left halfway (detached by the other's side) is
    // finished by the next run.
    const runs = await Promise.all([0, 1].map(() => runRetention(t.ctx, { pauseMs: 0 })));
    runs.push(await runRetention(t.ctx, { pauseMs: 0 }));
    const dropped = runs.flatMap((r) => r.retired!.dropped);
    expect(new Set(dropped).size).toBe(dropped.length);
    // The pending delivery's partition stays, with its event; the others are gone, with nothing deleted row by row.
    expect(runs[2].retired!.kept).toEqual([{ range: expect.stringMatching(/^webhook_deliveries_p/), reason: 'pending deliveries' }]);
    expect((await deliveries()).map((d) => d.id)).toEqual([pending.id]);
    expect((await t.ctx.db.query('SELECT id FROM events')).map((r) => r.id)).toEqual([pending.event_id]);
    expect((await t.ctx.db.query('SELECT delivery_id FROM webhook_delivery_attempts')).map((r) => r.delivery_id)).toEqual([pending.id]);
    expect(runs.reduce((n, r) => n + (r.deleted.webhook_deliveries ?? 0), 0)).toBe(0);

    // Archives: one per range dropped, complete, holding the finished deliveries and no secret.
    const archives = await listArchives(dir);
    expect(archives.every((a) => a.manifest !== undefined)).toBe(true);
    expect(archives.length).toBeGreaterThanOrEqual(dropped.length);
    const finished = all.filter((d) => d.id !== pending.id);
    const archived = archives.flatMap((a) => a.manifest!.tables.filter((x) => x.table === 'webhook_deliveries').map((x) => x.rows));
    expect(archived.reduce((a, b) => a + b, 0)).toBe(finished.length);
    for (const a of archives) {
      const data = await readFile(a.file.replace('.manifest.json', '.jsonl.gz'));
      const text = (await import('node:zlib')).gunzipSync(data).toString();
      expect(text).not.toContain(endpoint.secret);
    }

    // Once it is no longer pending, the partition goes too.
    await t.ctx.db.query(`UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL WHERE id = $1`, [pending.id]);
    const last = await runRetention(t.ctx, { pauseMs: 0 });
    expect(last.retired!.dropped).toHaveLength(1);
    expect(await deliveries()).toEqual([]);
  });

  it('refuses an archive cut halfway, and brings a whole one back to be read and replayed', async () => {
    const archives = (await listArchives(dir)).filter((a) => a.manifest!.tables.some((x) => x.table === 'webhook_deliveries' && x.rows > 0));
    const [cut, whole] = archives.slice(-2);
    const data = cut.file.replace('.manifest.json', '.jsonl.gz');
    await truncate(data, Math.floor(cut.manifest!.bytes / 2));
    await expect(openArchive(cut.file)).rejects.toThrow(/incomplete/);
    await expect(restoreArchive(t.ctx.db, cut.file, clock.now())).rejects.toThrow(/incomplete/);
    expect((await listArchives(dir)).find((a) => a.file === cut.file)!.problem).toMatch(/incomplete/);
    // A data file whose manifest was never written is no archive either.
    await rm(cut.file);
    expect((await listArchives(dir)).find((a) => a.file === data)!.problem).toMatch(/no manifest/);
    expect((await readdir(dir)).some((n) => n.endsWith('.tmp'))).toBe(false);

    const until = new Date(clock.now().getTime() + DAY);
    const restored = await restoreArchive(t.ctx.db, whole.file, until);
    expect(restored.rows.webhook_deliveries).toBeGreaterThan(0);
    const [back] = await deliveries();
    const read = await t.call(key, 'GET', `/v1/webhooks/deliveries/${back.id}`);
    expect(read.statusCode).toBe(200);
    expect(read.json().delivery).toMatchObject({ id: back.id, status: back.status });
    const replay = await t.call(key, 'POST', `/v1/webhooks/deliveries/${back.id}/replay`);
    expect(replay.statusCode).toBe(201);
    expect((await t.call(key, 'GET', `/v1/webhooks/deliveries/${replay.json().delivery.id}`)).json().delivery).toMatchObject({ replayOf: back.id, status: 'pending' });

    // Held until the time given: retention leaves it, then takes it again.
    expect((await runRetention(t.ctx, { pauseMs: 0 })).retired!.kept.map((k) => k.reason)).toContain('restored from an archive');
    clock.advance(DAY + MINUTE);
    await ensurePartitions(t.ctx.db, clock.now(), MINUTE);
    await t.ctx.db.query(`UPDATE webhook_deliveries SET status = 'success', next_attempt_at = NULL`);
    await runRetention(t.ctx, { pauseMs: 0 });
    expect(await deliveries()).toEqual([]);
  });

  it('finishes a range a run left halfway: two of its tables detached, the third still attached', async () => {
    clock.advance(MINUTE);
    await ensurePartitions(t.ctx.db, clock.now(), MINUTE);
    await createProduct(t, 'Left halfway');
    await t.ctx.db.query(`UPDATE webhook_deliveries SET status = 'success', next_attempt_at = NULL`);
    const [row] = await deliveries();
    const range = (await listPartitions(t.ctx.db, 'webhook_deliveries')).find((p) => p.to > clock.now().getTime())!;
    clock.advance(10 * MINUTE);
    await ensurePartitions(t.ctx.db, clock.now(), MINUTE);
    // The run that decided the range detached its deliveries and attempts, then its events' detach timed out.
    for (const table of ['webhook_deliveries', 'webhook_delivery_attempts']) {
      await t.ctx.db.query(`ALTER TABLE ${table} DETACH PARTITION ${table}${range.name.slice('webhook_deliveries'.length)}`);
    }
    expect((await t.ctx.db.query('SELECT id FROM events WHERE id = $1', [row.event_id])).length).toBe(1);

    const run = await runRetention(t.ctx, { pauseMs: 0 });
    expect(run.retired!.dropped).toContain(range.name);
    expect(await t.ctx.db.query('SELECT id FROM events')).toEqual([]);
    const left = await t.ctx.db.query(`SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND relname LIKE $1`, [`%${range.name.slice('webhook_deliveries'.length)}`]);
    expect(left).toEqual([]);
  });
});
