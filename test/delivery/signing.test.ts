import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newSigningSecret } from '../../src/engine/delivery/secrets.js';
import { sign } from '../../src/engine/delivery/sign.js';
import { USER_AGENT, deliveryHeaders } from '../../src/engine/delivery/attempt.js';
import type { TestApp } from '../helpers/app.js';
import { addEndpoint, closeAppAndReceiver, createProduct, deliveriesOf, openAppAndReceiver, testWorker, verifyBySpec } from '../helpers/delivery.js';
import type { Receiver } from '../helpers/receiver.js';

describe('Standard Webhooks signature', () => {
  it('reproduces the published test vector', () => {
    expect(sign(['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'], 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}')).toBe(
      'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    );
  });

  it('puts one v1 value per secret in webhook-signature, current secret first', () => {
    const headers = deliveryHeaders(['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', newSigningSecret()], 'msg_p5jXN8AQM9LWM0D4loKWxJek', new Date(1614265330_000), '{"test": 2432232314}');
    expect(headers['webhook-timestamp']).toBe('1614265330');
    const values = headers['webhook-signature'].split(' ');
    expect(values).toHaveLength(2);
    expect(values[0]).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
    expect(values[1]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
  });
});

describe('signed deliveries end to end', () => {
  let t: TestApp;
  let receiver: Receiver;
  // The system clock: receivers' verifiers reject timestamps more than 5 minutes from their own.
  beforeAll(async () => ({ t, receiver } = await openAppAndReceiver({ config: { allowPrivateTargets: true } })));
  afterAll(() => closeAppAndReceiver(t, receiver));

  it('sends the stored event byte for byte, verifiable with the official library and by the spec', async () => {
    const { id: endpointId, secret } = await addEndpoint(t, `${receiver.url}/hooks/svc`);
    const productId = await createProduct(t, 'Verified hat');
    expect(await testWorker(t).runDue()).toBe(1);

    expect(receiver.requests).toHaveLength(1);
    const received = receiver.requests[0];
    const [delivery] = await deliveriesOf(t, endpointId);
    expect(received.method).toBe('POST');
    expect(received.url).toBe('/hooks/svc');
    expect(received.headers['content-type']).toBe('application/json');
    expect(received.headers['user-agent']).toBe(USER_AGENT);
    expect(received.headers['webhook-id']).toBe(delivery.id);

    const event = await t.call(t.demo.workspaces[0].apiKey, 'GET', `/v1/events/${delivery.event_id}`);
    expect(received.raw.equals(event.rawPayload)).toBe(true);
    expect(JSON.parse(received.body)).toMatchObject({ type: 'product.created', subject: { id: productId, type: 'product', url: `/v1/products/${productId}` } });

    expect(new Webhook(secret).verify(received.body, received.flatHeaders)).toEqual(JSON.parse(received.body));
    expect(verifyBySpec(secret, received.flatHeaders, received.raw)).toBe(true);
    expect(verifyBySpec(newSigningSecret(), received.flatHeaders, received.raw)).toBe(false);
    expect(() => new Webhook(newSigningSecret()).verify(received.body, received.flatHeaders)).toThrow();

    expect(delivery).toMatchObject({ status: 'success', attempt: 1, error: null, response_status: 200, response_body: 'ok', next_attempt_at: null });
    expect(delivery.delivered_at).toEqual(delivery.last_attempt_at);
    expect(delivery.response_time_ms).toBeGreaterThanOrEqual(0);
    expect(delivery.request_headers).toEqual({
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      'webhook-id': delivery.id,
      'webhook-timestamp': received.flatHeaders['webhook-timestamp'],
      'webhook-signature': received.flatHeaders['webhook-signature'],
    });
    expect(JSON.stringify(delivery.request_headers)).not.toContain(secret.slice(6));
    expect(delivery.response_headers).toMatchObject({ 'content-type': 'text/plain' });
  });

  it('signs with both secrets during a rotation, each verifying on its own, and only the new one after it', async () => {
    const { id: endpointId, secret: oldSecret } = await addEndpoint(t, receiver.url);
    const newSecret = newSigningSecret();
    const rotate = (expiresAt: Date) =>
      t.ctx.db.query(
        `UPDATE webhook_endpoints SET previous_secret_enc = $2, secret_enc = $3, previous_secret_expires_at = $4 WHERE id = $1`,
        [endpointId, t.ctx.secrets.encrypt(oldSecret), t.ctx.secrets.encrypt(newSecret), expiresAt],
      );
    await rotate(new Date(t.clock.now().getTime() + 24 * 3_600_000));
    await createProduct(t, 'Rotated hat');
    await testWorker(t).runDue();
    const [first] = await deliveriesOf(t, endpointId);
    const during = receiver.requests.find((r) => r.flatHeaders['webhook-id'] === first.id)!;
    expect(during.flatHeaders['webhook-signature'].split(' ')).toHaveLength(2);
    for (const secret of [oldSecret, newSecret]) {
      expect(new Webhook(secret).verify(during.body, during.flatHeaders)).toEqual(JSON.parse(during.body));
      expect(verifyBySpec(secret, during.flatHeaders, during.raw)).toBe(true);
    }

    await rotate(new Date(t.clock.now().getTime() - 1000));
    await createProduct(t, 'Later hat');
    await testWorker(t).runDue();
    const rows = await deliveriesOf(t, endpointId);
    const after = receiver.requests.find((r) => r.flatHeaders['webhook-id'] === rows[1].id)!;
    expect(after.flatHeaders['webhook-signature'].split(' ')).toHaveLength(1);
    expect(verifyBySpec(newSecret, after.flatHeaders, after.raw)).toBe(true);
    expect(verifyBySpec(oldSecret, after.flatHeaders, after.raw)).toBe(false);
  });
});
