import { isIP } from 'node:net';
import type { FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';
import type { Principal } from '../auth/principal.js';
import type { Config } from '../../lib/config.js';
import { ApiError } from '../errors.js';
import type { Hook } from '../route-hooks.js';
import { settle } from '../settle.js';
import type { Clock } from '../../lib/clock.js';
import type { RateLimitDecision, RateLimitRule, RateLimitStore } from './store.js';

/** What the rate limits use. */
export interface RateLimitDeps {
  clock: Clock;
  /** Redis with REDIS_URL, else memory. */
  rateLimits: RateLimitStore;
  config: Pick<Config, 'rateLimitApiKey' | 'rateLimitPat' | 'rateLimitUnauthenticated'>;
}

/** Every limit of the service counts requests per minute (docs/rate-limits.md). */
export const WINDOW_MS = 60_000;

/**
 * IETF httpapi rate-limit headers (docs/rate-limits.md#headers): the policy, what is left of it now and the
 * seconds until it starts to refill; a refusal adds Retry-After.
 */
function setHeaders(reply: FastifyReply, policy: string, decision: RateLimitDecision, policyText = policyHeader(policy, decision.limit)): void {
  reply.header('RateLimit-Policy', policyText);
  reply.header('RateLimit', `"${policy}";r=${decision.remaining};t=${Math.ceil(decision.resetMs / 1000)}`);
  if (!decision.allowed) reply.header('Retry-After', String(Math.max(1, Math.ceil(decision.retryAfterMs / 1000))));
}

function policyHeader(policy: string, limit: number): string {
  return `"${policy}";q=${limit};w=${WINDOW_MS / 1000}`;
}

function refused(decision: RateLimitDecision, what: string): ApiError {
  const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
  return new ApiError('RATE_LIMITED', `${what} (${decision.limit} per minute). Retry after ${seconds} s.`);
}

export function credentialRule(deps: RateLimitDeps, principal: Principal): RateLimitRule {
  const fallback = principal.kind === 'api_key' ? deps.config.rateLimitApiKey : deps.config.rateLimitPat;
  return { limit: principal.rateLimit ?? fallback, windowMs: WINDOW_MS };
}

/**
 * A hit, then `then` with its decision: at once (no promise) when the store answers at once, as the
 * in-memory one does; a promise when it has to ask Redis.
 */
function hitThen(deps: RateLimitDeps, key: string, rule: RateLimitRule, consume: boolean, then: (decision: RateLimitDecision) => void): void | Promise<void> {
  const nowMs = deps.clock.now().getTime();
  const store = deps.rateLimits;
  if (store.hitSync) return then(store.hitSync(key, rule, nowMs, consume));
  return store.hit(key, rule, nowMs, consume).then(then);
}

/** A credential's counter key, rule and policy header, worked out once per principal. */
interface CredentialLimit {
  deps: RateLimitDeps;
  key: string;
  rule: RateLimitRule;
  policy: string;
}

/** Principals are the credential cache's objects, so this lives as long as their cache entries. */
const credentialLimits = new WeakMap<Principal, CredentialLimit>();

function credentialLimit(deps: RateLimitDeps, principal: Principal): CredentialLimit {
  let limit = credentialLimits.get(principal);
  if (!limit || limit.deps !== deps) {
    const rule = credentialRule(deps, principal);
    limit = { deps, key: `cred:${principal.credentialId}`, rule, policy: policyHeader('default', rule.limit) };
    credentialLimits.set(principal, limit);
  }
  return limit;
}

/** Counts an authenticated request against its credential; past the limit, 429 RATE_LIMITED. */
export function limitCredential(deps: RateLimitDeps, reply: FastifyReply, principal: Principal): void | Promise<void> {
  const limit = credentialLimit(deps, principal);
  return hitThen(deps, limit.key, limit.rule, true, (decision) => {
    setHeaders(reply, 'default', decision, limit.policy);
    if (!decision.allowed) throw refused(decision, 'Too many requests for this credential');
  });
}

/**
 * The address a failed authentication is counted against. IPv6 clients usually hold a whole /64,
 * so they are counted per /64; IPv4-mapped IPv6 addresses count as the IPv4 address.
 */
export function addressKey(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1];
  if (isIP(ip) !== 6) return ip;
  const [head, tail = ''] = ip.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
}

/** Counter keys by client address as the socket reports it: every request of a client has the same. */
const addressCounterKeys = new Map<string, string>();

function addressCounterKey(ip: string): string {
  let key = addressCounterKeys.get(ip);
  if (key === undefined) {
    if (addressCounterKeys.size >= 10_000) addressCounterKeys.clear();
    key = `addr:${addressKey(ip)}`;
    addressCounterKeys.set(ip, key);
  }
  return key;
}

function addressRule(deps: RateLimitDeps): RateLimitRule {
  return { limit: deps.config.rateLimitUnauthenticated, windowMs: WINDOW_MS };
}

/**
 * Before any credential is looked at: an address whose failed authentications reached the limit is
 * refused with 429 until they age out, whatever it sends, so token guessing is bounded.
 */
export function guardAddress(deps: RateLimitDeps, request: FastifyRequest, reply: FastifyReply): void | Promise<void> {
  return hitThen(deps, addressCounterKey(request.ip), addressRule(deps), false, (decision) => {
    if (decision.allowed) return;
    setHeaders(reply, 'unauthenticated', decision);
    throw refused(decision, 'Too many failed authentications from this address');
  });
}

/** Counts a failed authentication (a 401) against the client address, then lets the 401 through. */
export async function countFailure(deps: RateLimitDeps, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const decision = await deps.rateLimits.hit(addressCounterKey(request.ip), addressRule(deps), deps.clock.now().getTime());
  setHeaders(reply, 'unauthenticated', decision);
}

/** The address guard's hook (plugin.ts registers it first of the request hooks). */
export function addressGuardHook(deps: RateLimitDeps): Hook {
  return (request, reply, done) => settle(() => guardAddress(deps, request, reply), done);
}

/** The credential's limit, right after authentication. */
export function credentialLimitHook(deps: RateLimitDeps): Hook {
  return (request, reply, done) => settle(() => (request.principal ? limitCredential(deps, reply, request.principal) : undefined), done);
}

/** Every 401 answered under /v1/ counts against its address. */
export function failureCountHook(deps: RateLimitDeps): onSendHookHandler {
  return (request, reply, payload, done) => {
    if (reply.statusCode !== 401 || !request.url.startsWith('/v1/')) return done(null, payload);
    countFailure(deps, request, reply).then(
      () => done(null, payload),
      () => done(null, payload),
    );
  };
}
