import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asAdmin, openTestDb, type TestDb } from './helpers/db.js';

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('LISTEN connection', () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await openTestDb();
  });
  afterAll(() => t.close());

  it('comes back after the server drops it, listens again and wakes its handlers', async () => {
    const channel = `test_${randomBytes(4).toString('hex')}`;
    const payloads: string[] = [];
    await t.db.listen(channel, (payload) => payloads.push(payload));
    await t.db.query(`SELECT pg_notify('${channel}', 'before')`);
    await until(() => payloads.includes('before'));

    const rows = await asAdmin((sql) => sql.unsafe(`SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE query = $1`, [`LISTEN "${channel}"`]));
    expect([...rows]).toEqual([{ done: true }]);

    // Every handler is called when the connection is lost and again once it listens anew
    // (notifications may have been missed meanwhile)...
    await until(() => payloads.filter((p) => p === '').length >= 2);
    // ...and notifications flow again on the new connection.
    await t.db.query(`SELECT pg_notify('${channel}', 'after')`);
    await until(() => payloads.includes('after'));
  });
});
