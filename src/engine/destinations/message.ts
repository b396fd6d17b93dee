import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { DeadlineError } from '../../lib/deadline.js';
import { RefusedAddressError, classifyAddress } from './ssrf.js';
import type { SendRequest } from './sender.js';

/** What a broker destination is built with, from the service's settings. */
export interface BrokerOptions {
  /** How long a publish may wait for the broker's answer (and a connection for its opening). */
  timeoutMs: number;
  allowPrivateTargets: boolean;
  /** A connection unused this long is closed. */
  idleMs: number;
}

/** The header that carries the event type beside the Standard Webhooks headers (webhook-* names are the service's own). */
export const EVENT_TYPE_HEADER = 'webhook-event-type';

/**
 * A message's headers: what an HTTPS delivery sends (content-type, webhook-id, webhook-timestamp,
 * webhook-signature, the endpoint's own headers) but the HTTP-only user-agent, and the event type,
 * so a consumer verifies a message as it would a webhook.
 */
export function brokerHeaders(req: SendRequest): Record<string, string> {
  const { 'user-agent': _, ...headers } = req.headers;
  if (req.eventType !== undefined) headers[EVENT_TYPE_HEADER] = req.eventType;
  return headers;
}

/** Why a literal IP host must not be connected to, or null (names are checked when resolved). */
export function refusedLiteral(hostname: string): string | null {
  const host = hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host) === 0) return null;
  const reason = classifyAddress(host);
  return reason === null ? null : new RefusedAddressError(host, host, reason).message;
}

/**
 * Why a broker host must not be connected to, resolving a name: null when it has a public address
 * (or does not resolve: connecting then fails on its own). For a client that resolves names
 * itself and takes no lookup function (nats), so the check runs just before it connects.
 */
export async function refusedHost(hostname: string): Promise<string | null> {
  const host = hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host) !== 0) return refusedLiteral(host);
  const addresses = await lookup(host, { all: true, verbatim: true }).catch(() => []);
  if (addresses.length === 0 || addresses.some((a) => classifyAddress(a.address) === null)) return null;
  return new RefusedAddressError(host, addresses[0].address, classifyAddress(addresses[0].address)!).message;
}

/** A short, readable reason for a failed publish or connection; never the URL, so never its credentials. */
export function brokerError(error: unknown): string {
  const e = error as { code?: string | number; message?: string; cause?: unknown };
  if (error instanceof RefusedAddressError) return error.message;
  if (error instanceof DeadlineError) return `timeout: ${error.message}`;
  if (e.cause instanceof RefusedAddressError) return e.cause.message;
  switch (e.code) {
    case 'ECONNREFUSED':
    case 'CONNECTION_REFUSED':
      return 'connection refused';
    case 'ECONNRESET':
    case 'EPIPE':
      return 'connection reset by the broker';
    case 'ENOTFOUND':
      return 'DNS lookup failed: host not found';
    case 'EAI_AGAIN':
      return 'DNS lookup failed: temporary failure';
    case 'ETIMEDOUT':
    case 'TIMEOUT':
      return 'timeout';
  }
  const message = (e.message ?? String(error)).replace(/\s+/g, ' ');
  return `broker error: ${message.replace(/[a-z][a-z0-9+.-]*:\/\/[^\s@/]*@/gi, '').slice(0, 200)}`;
}
