import { createPublicKey, verify } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook, WebhookVerificationError } from '../../sdk/src/index.js';
import type { TestApp } from '../helpers/app.js';
import { closeAppAndReceiver, createProduct, openAppAndReceiver, testWorker } from '../helpers/delivery.js';
import type { Receiver } from '../helpers/receiver.js';

/** A `whpk_` key as Node's crypto takes it: its 32 bytes in an SPKI wrapper (RFC 8410). */
function publicKey(whpk: string) {
  expect(whpk).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
  const raw = Buffer.from(whpk.slice(5), 'base64');
  return createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw]), format: 'der', type: 'spki' });
}

/** Whether any `v1a,` value of the headers verifies `<id>.<timestamp>.<body>` under the key, by Node's crypto.verify. */
function verifiesWith(whpk: string, headers: Record<string, string>, body: Buffer): boolean {
  const content = Buffer.concat([Buffer.from(`${headers['webhook-id']}.${headers['webhook-timestamp']}.`), body]);
  return headers['webhook-signature'].split(' ').some((value) => {
    const [version, signature] = value.split(',');
    return version === 'v1a' && verify(null, content, publicKey(whpk), Buffer.from(signature, 'base64'));
  });
}

describe('v1a (ed25519) signatures', () => {
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => ({ t, receiver } = await openAppAndReceiver({ config: { allowPrivateTargets: true } })));
  afterAll(() => closeAppAndReceiver(t, receiver));
  const key = () => t.demo.workspaces[0].apiKey;

  it('signs with the endpoint key, verifiable by its public key, and refuses tampering', async () => {
    const created = await t.call(key(), 'POST', '/v1/webhooks/endpoints', { url: `${receiver.url}/v1a`, subscribedEvents: ['product.*'], signatureScheme: 'v1a' });
    expect(created.statusCode).toBe(201);
    const endpoint = created.json();
    expect(endpoint.signatureScheme).toBe('v1a');
    expect(endpoint).not.toHaveProperty('secret');
    const whpk: string = endpoint.publicKey;
    publicKey(whpk);
    expect((await t.call(key(), 'GET', `/v1/webhooks/endpoints/${endpoint.id}`)).json().publicKey).toBe(whpk);

    // The private key is sealed under the master key at rest.
    const [row] = await t.ctx.db.query<{ secret_enc: string }>('SELECT secret_enc FROM webhook_endpoints WHERE id = $1', [endpoint.id]);
    expect(row.secret_enc).toMatch(/^v1\./);
    expect(t.ctx.secrets.decrypt(row.secret_enc)).toMatch(/^whsk_/);

    await createProduct(t, 'Asymmetric hat');
    expect(await testWorker(t).runDue()).toBe(1);
    const received = receiver.requests.at(-1)!;
    expect(received.flatHeaders['webhook-signature']).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
    expect(verifiesWith(whpk, received.flatHeaders, received.raw)).toBe(true);
    expect(verifyWebhook(whpk, received.headers, received.raw)).toMatchObject({ type: 'product.created' });

    const tampered = Buffer.from(received.body.replace('product.created', 'product.deleted'));
    expect(verifiesWith(whpk, received.flatHeaders, tampered)).toBe(false);
    expect(verifiesWith(whpk, { ...received.flatHeaders, 'webhook-timestamp': String(Number(received.flatHeaders['webhook-timestamp']) + 1) }, received.raw)).toBe(false);
    expect(() => verifyWebhook(whpk, received.headers, tampered)).toThrow(WebhookVerificationError);
    const other = (await t.call(key(), 'POST', '/v1/webhooks/endpoints', { url: receiver.url, subscribedEvents: ['order.*'], signatureScheme: 'v1a' })).json();
    expect(verifiesWith(other.publicKey, received.flatHeaders, received.raw)).toBe(false);
    expect(() => verifyWebhook(other.publicKey, received.headers, received.raw)).toThrow(WebhookVerificationError);
  });

  it('signs with both keys during a rotation, and only with the new one after the overlap', async () => {
    const endpoint = (await t.call(key(), 'POST', '/v1/webhooks/endpoints', { url: `${receiver.url}/rotated`, subscribedEvents: ['product.*'], signatureScheme: 'v1a' })).json();
    const rotated = await t.call(key(), 'POST', `/v1/webhooks/endpoints/${endpoint.id}/rotate-secret`);
    expect(rotated.statusCode).toBe(200);
    const { publicKey: newKey, previousSecretExpiresAt } = rotated.json();
    expect(rotated.json()).not.toHaveProperty('secret');
    expect(newKey).not.toBe(endpoint.publicKey);
    expect((await t.call(key(), 'GET', `/v1/webhooks/endpoints/${endpoint.id}`)).json().publicKey).toBe(newKey);

    const last = () => receiver.requests.filter((r) => r.url === '/rotated').at(-1)!;
    await createProduct(t, 'Rotating hat');
    await testWorker(t).runDue();
    const during = last();
    const values = during.flatHeaders['webhook-signature'].split(' ');
    expect(values).toHaveLength(2);
    expect(values.every((v) => v.startsWith('v1a,'))).toBe(true);
    expect(verifiesWith(newKey, during.flatHeaders, during.raw)).toBe(true);
    expect(verifiesWith(endpoint.publicKey, during.flatHeaders, during.raw)).toBe(true);
    // Each key verifies exactly one of the two values.
    for (const whpk of [newKey, endpoint.publicKey]) {
      const matching = values.filter((v) => verifiesWith(whpk, { ...during.flatHeaders, 'webhook-signature': v }, during.raw));
      expect(matching).toHaveLength(1);
    }

    await t.ctx.db.query('UPDATE webhook_endpoints SET previous_secret_expires_at = $2 WHERE id = $1', [endpoint.id, new Date(Date.parse(previousSecretExpiresAt) - 48 * 3_600_000)]);
    await createProduct(t, 'Rotated hat');
    await testWorker(t).runDue();
    const after = last();
    expect(after).not.toBe(during);
    expect(after.flatHeaders['webhook-signature'].split(' ')).toHaveLength(1);
    expect(verifiesWith(newKey, after.flatHeaders, after.raw)).toBe(true);
    expect(verifiesWith(endpoint.publicKey, after.flatHeaders, after.raw)).toBe(false);
  });

  it('keeps v1 the default and refuses an unknown scheme', async () => {
    const v1 = (await t.call(key(), 'POST', '/v1/webhooks/endpoints', { url: receiver.url, subscribedEvents: ['product.*'] })).json();
    expect(v1).toMatchObject({ signatureScheme: 'v1', publicKey: null, secret: expect.stringMatching(/^whsec_/) });
    const bad = await t.call(key(), 'POST', '/v1/webhooks/endpoints', { url: receiver.url, subscribedEvents: ['product.*'], signatureScheme: 'v2' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe('VALIDATION');
  });
});
