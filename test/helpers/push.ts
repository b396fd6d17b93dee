import { createECDH, createPublicKey, randomBytes, verify, type ECDH } from 'node:crypto';
import ece from 'http_ece';
import type { ReceivedRequest } from './receiver.js';

/** What a browser makes when it subscribes (PushManager.subscribe): a P-256 key pair and a 16-byte secret. */
export interface BrowserKeys {
  ecdh: ECDH;
  p256dh: string;
  auth: string;
}

export function browserKeys(): BrowserKeys {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  return { ecdh, p256dh: ecdh.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') };
}

/** A subscription as PushSubscription.toJSON() gives it, for POST /v1/me/push-devices. */
export function subscriptionBody(endpoint: string, keys: BrowserKeys, name?: string) {
  return { endpoint, expirationTime: null, keys: { p256dh: keys.p256dh, auth: keys.auth }, ...(name ? { name } : {}) };
}

/** The message's text, decrypted as the browser would (RFC 8291 aes128gcm) with the reference implementation. */
export function decryptPush(request: ReceivedRequest, keys: BrowserKeys): unknown {
  const plain = ece.decrypt(request.raw, { version: 'aes128gcm', privateKey: keys.ecdh, authSecret: keys.auth });
  return JSON.parse(plain.toString('utf8'));
}

export interface VapidClaims {
  aud: string;
  exp: number;
  sub: string;
}

/**
 * Checks `Authorization: vapid t=<JWT>, k=<public key>` (RFC 8292) as a push service does: k is the
 * given application server key, the JWT is ES256 and its signature verifies with k. Returns its claims.
 */
export function verifyVapid(authorization: string | undefined, publicKey: string): VapidClaims {
  const match = /^vapid t=([\w-]+\.[\w-]+\.[\w-]+), k=([\w-]+)$/.exec(authorization ?? '');
  if (!match) throw new Error(`not a VAPID Authorization header: ${authorization}`);
  const [, jwt, k] = match;
  if (k !== publicKey) throw new Error('k is not the service key');
  const [header, claims, signature] = jwt.split('.');
  const head = JSON.parse(Buffer.from(header, 'base64url').toString()) as { alg: string; typ: string };
  if (head.alg !== 'ES256') throw new Error(`alg ${head.alg}`);
  const point = Buffer.from(k, 'base64url');
  const key = createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33).toString('base64url') }, format: 'jwk' });
  const valid = verify('sha256', Buffer.from(`${header}.${claims}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64url'));
  if (!valid) throw new Error('the VAPID signature does not verify');
  return JSON.parse(Buffer.from(claims, 'base64url').toString()) as VapidClaims;
}
