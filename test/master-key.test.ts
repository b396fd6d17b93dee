import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDemo } from '../src/cli/demo.js';
import { ConfigError } from '../src/lib/config.js';
import { SecretBox } from '../src/lib/secretbox.js';
import { findResponse, keyScope, saveResponse } from '../src/http/idempotency/store.js';
import { keyMatches, rotateMasterKey, verifyMasterKey } from '../src/server/master-key.js';
import { createEndpoint, rotateSecret, signingSecrets } from '../src/webhooks/endpoints/store.js';
import { openHeaders } from '../src/webhooks/endpoints/headers.js';
import { openTestDb, type TestDb } from './helpers/db.js';

/** The master key: a check value at first start, a wrong key refused, rotation in one transaction. */
describe('master key', () => {
  let testDb: TestDb;
  let workspaceId: string;
  const now = new Date('2026-03-01T12:00:00.000Z');
  const box = () => new SecretBox(randomBytes(32));
  const sealed = async () =>
    testDb.db.query<{ id: string; secret_enc: string; previous_secret_enc: string | null; previous_secret_expires_at: Date | null; headers_enc: string | null }>(
      'SELECT id, secret_enc, previous_secret_enc, previous_secret_expires_at, headers_enc FROM webhook_endpoints ORDER BY id',
    );
  const checkRows = async () => testDb.db.query<{ check_value: string; rotated_at: Date | null }>('SELECT check_value, rotated_at FROM master_key_check');

  /** Extra request headers of the first endpoint, sealed like its secret. */
  const HEADERS = { authorization: 'Bearer receiver-credential-1', 'x-tenant': 'acme' };

  /**
   * Two endpoints sealed under `current`, the first with extra headers, the second rotated once so it
   * has a previous secret too; their secrets in clear.
   */
  async function endpoints(current: SecretBox): Promise<string[][]> {
    await createEndpoint(testDb.db, current, { workspaceId, url: 'https://a.example.com/in', subscribedEvents: ['product.*'], headers: HEADERS }, now);
    await createEndpoint(testDb.db, current, { workspaceId, url: 'https://b.example.com/in', subscribedEvents: ['product.*'] }, now);
    const [, second] = await sealed();
    await rotateSecret(testDb.db, current, workspaceId, second.id, now);
    return (await sealed()).map((row) => signingSecrets(current, row, now));
  }

  beforeAll(async () => {
    testDb = await openTestDb();
    workspaceId = (await createDemo(testDb.db, 'http://api.test', now)).workspaces[0].id;
  });
  afterAll(() => testDb?.close());
  // Each test starts as a first start: no check value, no secrets.
  beforeEach(async () => {
    await testDb.db.query('DELETE FROM master_key_check');
    await testDb.db.query('DELETE FROM webhook_endpoints');
    await testDb.db.query('DELETE FROM idempotency_keys');
  });

  it('stores a check value at the first start and refuses any other key from then on, in one line naming it', async () => {
    const right = box();
    await verifyMasterKey(testDb.db, right, 'SVC_MASTER_KEY', now);
    expect(await checkRows()).toHaveLength(1);
    const refused = verifyMasterKey(testDb.db, box(), 'SVC_MASTER_KEY', now);
    await expect(refused).rejects.toThrow(ConfigError);
    await expect(refused).rejects.toThrow(/^SVC_MASTER_KEY is not the master key this database's secrets are encrypted with: [^\n]*$/);
    await verifyMasterKey(testDb.db, right, 'SVC_MASTER_KEY', now);
    expect(await checkRows()).toHaveLength(1);
  });

  it('judges a database whose secrets predate the check value by opening one, and records nothing for a wrong key', async () => {
    const right = box();
    await endpoints(right);
    expect(await keyMatches(testDb.db, box(), now)).toBe(false);
    expect(await checkRows()).toEqual([]);
    expect(await keyMatches(testDb.db, right, now)).toBe(true);
    expect(await checkRows()).toHaveLength(1);
  });

  it('re-encrypts every secret, previous secret and header set, and the check value, in one transaction', async () => {
    const current = box();
    await verifyMasterKey(testDb.db, current, 'SVC_MASTER_KEY', now);
    const secrets = await endpoints(current);
    expect(secrets.map((s) => s.length)).toEqual([1, 2]);
    const before = await sealed();
    // A stored idempotent response (a created endpoint's, with its secret) is sealed too.
    const scope = keyScope(workspaceId, 'key_x');
    const response = { requestHash: 'h', status: 201, contentType: 'application/json; charset=utf-8', body: JSON.stringify({ secret: secrets[0][0] }) };
    await saveResponse(testDb.db, current, scope, 'k', response, now);

    const next = box();
    const later = new Date(now.getTime() + 60_000);
    expect(await rotateMasterKey(testDb.db, current, next, later)).toEqual({
      reencrypted: {
        'webhook_endpoints.secret_enc': 2,
        'webhook_endpoints.previous_secret_enc': 1,
        'webhook_endpoints.headers_enc': 1,
        'webhook_endpoints.url_enc': 0,
        'idempotency_keys.response_enc': 1,
        // None made in this database: push keys and devices are tested in push-keys.test.ts.
        'push_keys.private_key_enc': 0,
        'push_devices.subscription_enc': 0,
      },
    });
    expect(await findResponse(testDb.db, next, scope, 'k', new Date(0))).toEqual(response);
    await expect(findResponse(testDb.db, current, scope, 'k', new Date(0))).rejects.toThrow();
    const after = await sealed();
    // The same secrets, sealed anew: only the new key opens them.
    expect(after.map((row) => signingSecrets(next, row, now))).toEqual(secrets);
    after.forEach((row, i) => expect(row.secret_enc).not.toBe(before[i].secret_enc));
    expect(() => signingSecrets(current, after[0], now)).toThrow();
    const withHeaders = after.find((row) => row.headers_enc !== null)!;
    expect(withHeaders.headers_enc).not.toBe(before.find((row) => row.id === withHeaders.id)!.headers_enc);
    expect(openHeaders(next, withHeaders.headers_enc)).toEqual(HEADERS);
    expect(() => openHeaders(current, withHeaders.headers_enc)).toThrow();
    expect(await keyMatches(testDb.db, next, later)).toBe(true);
    expect(await keyMatches(testDb.db, current, later)).toBe(false);
    expect((await checkRows())[0].rotated_at).toEqual(later);
  });

  it("re-encrypts a broker URL's credentials and a v1a private key", async () => {
    const current = box();
    await verifyMasterKey(testDb.db, current, 'SVC_MASTER_KEY', now);
    const url = 'amqps://svc:broker-password-1@mq.example.com/shop';
    const { row } = await createEndpoint(testDb.db, current, { workspaceId, url, subscribedEvents: ['product.*'], signatureScheme: 'v1a' }, now);
    expect(row.url).toBe('amqps://svc:***@mq.example.com/shop');
    expect(row.url_enc).not.toContain('broker-password-1');
    const key = current.decrypt(row.secret_enc);
    expect(key).toMatch(/^whsk_/);

    const next = box();
    const result = await rotateMasterKey(testDb.db, current, next, new Date(now.getTime() + 60_000));
    expect(result.reencrypted).toMatchObject({ 'webhook_endpoints.secret_enc': 1, 'webhook_endpoints.url_enc': 1 });
    const [after] = await testDb.db.query<{ url: string; url_enc: string; secret_enc: string }>('SELECT url, url_enc, secret_enc FROM webhook_endpoints WHERE id = $1', [row.id]);
    expect(after.url).toBe(row.url);
    expect(next.decrypt(after.url_enc)).toBe(url);
    expect(next.decrypt(after.secret_enc)).toBe(key);
    expect(() => current.decrypt(after.url_enc)).toThrow();
  });

  it('changes nothing when the current key is wrong, or when one value does not open with it', async () => {
    const current = box();
    await verifyMasterKey(testDb.db, current, 'SVC_MASTER_KEY', now);
    await endpoints(current);
    const before = await sealed();
    const check = await checkRows();

    await expect(rotateMasterKey(testDb.db, box(), box(), now)).rejects.toThrow(/current master key is not the one/);
    expect(await sealed()).toEqual(before);

    // One secret sealed under a stranger key: the rotation stops on it, naming the row, and writes nothing.
    await testDb.db.query('UPDATE webhook_endpoints SET previous_secret_enc = $1 WHERE id = $2', [box().encrypt('whsec_stranger'), before[1].id]);
    const damaged = await sealed();
    await expect(rotateMasterKey(testDb.db, current, box(), now)).rejects.toThrow(`webhook_endpoints.previous_secret_enc of ${before[1].id} cannot be decrypted`);
    expect(await sealed()).toEqual(damaged);
    expect(await checkRows()).toEqual(check);
  });
});
