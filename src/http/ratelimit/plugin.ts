import type { FastifyInstance } from 'fastify';
import { perRoute } from '../route-hooks.js';
import { addressGuardHook, credentialLimitHook, failureCountHook, type RateLimitDeps } from './hooks.js';

/**
 * The address guard, first of the request hooks: an address past its failed-authentication limit
 * is refused (429) before any credential is looked at, on every route under /v1/ and on paths
 * there that match none. Every 401 answered under /v1/ counts against its address.
 */
export function registerAddressGuard(app: FastifyInstance, deps: RateLimitDeps): void {
  const hook = addressGuardHook(deps);
  perRoute(app, 'onRequest', () => hook, hook);
  app.addHook('onSend', failureCountHook(deps));
  watchStore(app, deps);
}

/**
 * Requests per credential, right after authentication: past the limit, 429. With the counters in
 * memory (no REDIS_URL) nothing waits.
 */
export function registerCredentialLimits(app: FastifyInstance, deps: RateLimitDeps): void {
  const hook = credentialLimitHook(deps);
  perRoute(app, 'onRequest', (auth) => (auth?.scope === 'none' ? null : hook), hook);
}

/** Logs each change of the shared store's reachability once: one warning per outage, one recovery line. */
function watchStore(app: FastifyInstance, deps: RateLimitDeps): void {
  const unsubscribe = deps.rateLimits.onStatus?.((status) => {
    if (status.state === 'down') {
      app.log.warn({ reason: status.reason }, 'rate-limit store (Redis) unreachable: counting in this process until it is back');
    } else {
      app.log.info('rate-limit store (Redis) reachable again: counters are shared again');
    }
  });
  if (unsubscribe) app.addHook('onClose', async () => void unsubscribe());
}
