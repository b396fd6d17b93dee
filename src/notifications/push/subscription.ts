import { createPublicKey } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { validation } from '../../http/errors.js';
import { classifyAddress } from '../../engine/destinations/ssrf.js';

/** A browser's push subscription (PushSubscription.toJSON()), checked: what a push needs. */
export interface Subscription {
  endpoint: string;
  p256dh: string;
  auth: string;
}

/** How long a registration waits for the endpoint's host to resolve before leaving it to the send-time guard. */
const LOOKUP_TIMEOUT_MS = 2_000;

const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/;

const fail = (path: string, why: string) => validation(`Invalid ${path.replace('body.', '')}: ${why}.`, [{ path, message: why }]);

/** The bytes of a base64url text (padding allowed); null when it is not one. Stored unpadded. */
function base64url(text: string): Buffer | null {
  return BASE64URL.test(text) ? Buffer.from(text.replace(/=+$/, ''), 'base64url') : null;
}

/**
 * The subscription's keys (RFC 8291): `p256dh`, the browser's P-256 public key as an uncompressed
 * point (65 bytes) that lies on the curve, and `auth`, its 16-byte authentication secret.
 */
function checkKeys(p256dh: string, auth: string): { p256dh: string; auth: string } {
  const point = base64url(p256dh);
  if (!point || point.length !== 65 || point[0] !== 4) throw fail('body.keys.p256dh', 'must be a P-256 public key: 65 bytes (an uncompressed point) in base64url');
  try {
    createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33).toString('base64url') }, format: 'jwk' });
  } catch {
    throw fail('body.keys.p256dh', 'is not a point on the P-256 curve');
  }
  const secret = base64url(auth);
  if (!secret || secret.length !== 16) throw fail('body.keys.auth', 'must be 16 bytes in base64url');
  return { p256dh: point.toString('base64url'), auth: secret.toString('base64url') };
}

/**
 * The endpoint is a URL of the browser's push service, which the service will POST to: https only
 * (http too with SVC_ALLOW_PRIVATE_TARGETS, for tests and local development), in the plain form the
 * sender reads the same way, with no user name or password.
 */
function checkEndpoint(text: string, allowPrivateTargets: boolean): URL {
  const bad = (why: string) => fail('body.endpoint', why);
  if (/[\s\u0000-\u001f\u007f]/.test(text)) throw bad('must not contain spaces or control characters');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw bad('not an absolute URL');
  }
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/\\]/i.test(text)) throw bad('must be of the form https://host/path');
  if (url.protocol !== 'https:' && !(allowPrivateTargets && url.protocol === 'http:')) throw bad('must start with https://');
  if (!url.hostname) throw bad('has no host');
  if (url.username || url.password) throw bad('must not contain a user name or password');
  return url;
}

/**
 * The SSRF guard on the endpoint's host, at registration: an address literal or a name that resolves
 * only to loopback, private, link-local or other non-public addresses is refused with a clear 400.
 * A name that cannot be resolved now (a DNS hiccup) is accepted: every push is checked again where
 * it connects (engine/destinations/ssrf.ts), so a name re-pointed later is refused then.
 */
async function checkHost(url: URL): Promise<void> {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const refused = (address: string, reason: string) =>
    fail('body.endpoint', host === address ? `must not be a ${reason} address` : `its host resolves to ${address}, a ${reason} address`);
  if (isIP(host) !== 0) {
    const reason = classifyAddress(host);
    if (reason !== null) throw refused(host, reason);
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), LOOKUP_TIMEOUT_MS)));
  const addresses = await Promise.race([lookup(host, { all: true }), timeout])
    .catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOTFOUND') throw fail('body.endpoint', 'its host is not found');
      return null;
    })
    .finally(() => clearTimeout(timer));
  if (!addresses || addresses.length === 0) return;
  if (addresses.every((a) => classifyAddress(a.address) !== null)) throw refused(addresses[0].address, classifyAddress(addresses[0].address)!);
}

/** Checks a subscription as a browser sends it; 400 VALIDATION naming the field otherwise. */
export async function checkSubscription(body: { endpoint: string; keys: { p256dh: string; auth: string } }, allowPrivateTargets: boolean): Promise<Subscription> {
  const url = checkEndpoint(body.endpoint, allowPrivateTargets);
  const keys = checkKeys(body.keys.p256dh, body.keys.auth);
  if (!allowPrivateTargets) await checkHost(url);
  return { endpoint: body.endpoint, ...keys };
}

/** The push service's host, shown for a device instead of its endpoint URL (a capability). */
export function pushServiceOf(endpoint: string): string {
  return new URL(endpoint).host;
}
