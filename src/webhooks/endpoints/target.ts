import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { validation } from '../../http/errors.js';
import { classifyAddress } from '../../engine/destinations/ssrf.js';
import { REDACTED, kindOfProtocol } from './destination.js';

/** How long creating or changing an endpoint waits for its host's addresses. */
export const RESOLVE_TIMEOUT_MS = 2000;

const SETTING = 'SVC_ALLOW_PRIVATE_TARGETS';

/** The host's addresses; none when the name does not resolve, or not within RESOLVE_TIMEOUT_MS. */
async function addressesOf(host: string): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string[]>((resolve) => {
    timer = setTimeout(() => resolve([]), RESOLVE_TIMEOUT_MS);
    timer.unref();
  });
  const found = lookup(host, { all: true, verbatim: true }).then(
    (list) => list.map((a) => a.address),
    () => [],
  );
  try {
    return await Promise.race([found, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Refuses, at creation or change, an endpoint URL the sender would refuse on every attempt: a host
 * that is, or resolves only to, a loopback, private, link-local or other non-public address
 * (destinations/ssrf.ts decides which). A name that does not resolve (yet) is accepted, as Svix does:
 * DNS may be down for a moment or the record made later, and the sender checks the address it
 * connects to on every attempt anyway. With SVC_ALLOW_PRIVATE_TARGETS nothing is checked.
 */
export async function checkTarget(url: string, allowPrivateTargets: boolean): Promise<void> {
  if (allowPrivateTargets) return;
  const host = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
  const literal = isIP(host) !== 0;
  const addresses = literal ? [host] : await addressesOf(host);
  if (addresses.length === 0 || addresses.some((address) => classifyAddress(address) === null)) return;
  const [first] = addresses;
  const reason = classifyAddress(first)!;
  const what = literal ? `${host} is not a public address (${reason})` : `${host} resolves to ${first}, not a public address (${reason})`;
  const why = `${what}; endpoints must be reachable on the public internet (${SETTING}=1 allows private targets, for local development only)`;
  throw validation(`Invalid url: ${why}.`, [{ path: 'body.url', message: why }]);
}

/** Why http:// is refused, naming the setting that allows it. */
export const HTTPS_ONLY = `must start with https:// (or amqp://, amqps://, nats://, tls:// for a broker; http:// needs ${SETTING}=1, for local development only)`;

/**
 * Endpoint URLs must be https:// (docs/security.md#outbound-requests-ssrf), or name a broker (amqp://, amqps://,
 * nats://, tls://, docs/destinations.md); http:// only where private targets are allowed for local
 * development. Credentials are refused in an https:// URL (a receiver's credential goes in
 * `headers`), and allowed in a broker's, which the store seals and shows redacted; a redacted one
 * (`***`) cannot be sent back. Which addresses the host has is checked by checkTarget, and again
 * when connecting.
 */
export function checkUrl(text: string, allowHttp: boolean): string {
  const fail = (why: string) => validation(`Invalid url: ${why}.`, [{ path: 'body.url', message: why }]);
  // The WHATWG parser forgives what it then rewrites (spaces, `https:///x`, backslashes); the URL
  // is stored as given, so it must already be in the plain form the sender will read the same way.
  if (/[\s\u0000-\u001f\u007f]/.test(text)) throw fail('must not contain spaces or control characters');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw fail('not an absolute URL');
  }
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/\\]/i.test(text)) throw fail('must be of the form https://host/path');
  const kind = kindOfProtocol(url.protocol);
  if (kind === null || (url.protocol === 'http:' && !allowHttp)) {
    throw fail(allowHttp ? 'must start with https://, http://, amqp://, amqps://, nats:// or tls://' : HTTPS_ONLY);
  }
  if (!url.hostname) throw fail('has no host');
  if (kind === 'http' && (url.username || url.password)) throw fail('must not contain a user name or password (send a credential in headers)');
  if (url.password === REDACTED || (kind === 'nats' && !url.password && url.username === REDACTED)) {
    throw fail('carries a redacted password (***): send the whole URL with its password, or leave url out');
  }
  return text;
}
