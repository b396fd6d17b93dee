import { Agent } from 'undici';
import { checkTargetUrl, guardedConnector } from '../../engine/destinations/ssrf.js';
import { describeError } from '../../engine/destinations/sender.js';
import type { PushRequest } from './message.js';

/** How a push service answered: its status, or why there was no answer. */
export interface PushAnswer {
  status: number | null;
  error: string | null;
  /** Seconds the service asked to wait (Retry-After on a 429 or 503), if it said. */
  retryAfter: number | null;
}

/**
 * POSTs Web Push messages through one undici Agent guarded like webhook deliveries: https only and
 * public addresses only, checked where it connects (engine/destinations/ssrf.ts), unless
 * SVC_ALLOW_PRIVATE_TARGETS is set. One hard timer per request covers connecting to the last byte;
 * redirects are never followed.
 */
export class PushTransport {
  private readonly agent: Agent;

  constructor(private readonly options: { timeoutMs: number; allowPrivateTargets: boolean }) {
    const connect = { timeout: options.timeoutMs };
    this.agent = new Agent({ connect: options.allowPrivateTargets ? connect : guardedConnector(connect), keepAliveTimeout: 30_000 });
  }

  /** Sends one message; never throws. `abort` ends it at once (the queue stopping). */
  async send(request: PushRequest, abort: AbortSignal): Promise<PushAnswer> {
    const refused = checkTargetUrl(request.endpoint, this.options.allowPrivateTargets);
    if (refused !== null) return { status: null, error: refused, retryAfter: null };
    const url = new URL(request.endpoint);
    const deadline = AbortSignal.timeout(this.options.timeoutMs);
    try {
      const response = await this.agent.request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: 'POST',
        headers: request.headers,
        body: request.body,
        signal: AbortSignal.any([abort, deadline]),
      });
      // The answer's body says nothing a push needs; it is read off so the connection can be reused.
      await response.body.dump({ limit: 64 * 1024 });
      const retryAfter = Number(response.headers['retry-after']);
      return { status: response.statusCode, error: null, retryAfter: Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter : null };
    } catch (error) {
      const why = deadline.aborted ? `timeout: no complete answer within ${this.options.timeoutMs} ms` : abort.aborted ? 'stopped' : describeError(error);
      return { status: null, error: why, retryAfter: null };
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}
