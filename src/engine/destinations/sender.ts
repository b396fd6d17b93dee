import { performance } from 'node:perf_hooks';
import { Agent, type Dispatcher } from 'undici';
import type { Route } from './route.js';
import { RefusedAddressError, checkTargetUrl, guardedConnector } from './ssrf.js';

/** Largest part of a receiver's response body that is kept in the delivery log. */
export const MAX_RESPONSE_BODY_BYTES = 64 * 1024;

export interface SendRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** The event's type: a broker's default routing key or subject, and a message header. */
  eventType?: string;
  /** Where a broker publishes (the endpoint's exchange, routingKey, subject); HTTPS ignores it. */
  route?: Route;
}

/**
 * One attempt, as the delivery log records it. For HTTPS `ok` is a 2xx answer received in full in
 * time; for a broker, its acknowledgement (then `body` is the broker's answer and `status` null).
 */
export interface SendResult {
  ok: boolean;
  status: number | null;
  headers: Record<string, string> | null;
  body: string | null;
  timeMs: number;
  error: string | null;
  /** No complete answer within the time-out (the receiver may be hanging). */
  timedOut: boolean;
}

/** What the engine sends through: a destination (HttpSender, the brokers' senders) or all of them (destinations/destinations.ts). */
export interface Sender {
  send(request: SendRequest): Promise<SendResult>;
  close(): Promise<void>;
}

export interface HttpSenderOptions {
  timeoutMs: number;
  allowPrivateTargets: boolean;
  maxResponseBytes?: number;
}

class DeliveryTimeout extends Error {}

/** Ends reading a response whose body is longer than what is kept. */
class BodyTooLarge extends Error {}

/** Where a delivery URL is sent, once checked and parsed; or why it is refused. */
type Target = { origin: string; path: string } | string;

/** Endpoint URLs checked and parsed, kept so an attempt does not parse its URL again (bounded). */
const MAX_TARGETS = 10_000;

/**
 * POSTs through one shared undici Agent, so connections to a receiver are pooled and kept alive
 * across deliveries. The time-out is one hard timer from before connecting to the last byte of the
 * response; redirects are never followed (a 3xx is simply not a 2xx). A response body is read up to
 * the part that is kept (`maxResponseBytes`); a longer one ends the attempt there, judged by its
 * status, and its connection is dropped rather than read to the end.
 */
export class HttpSender implements Sender {
  private readonly agent: Agent;
  private readonly maxResponseBytes: number;
  private readonly targets = new Map<string, Target>();

  constructor(private readonly options: HttpSenderOptions) {
    this.maxResponseBytes = options.maxResponseBytes ?? MAX_RESPONSE_BODY_BYTES;
    const connect = { timeout: options.timeoutMs };
    this.agent = new Agent({ connect: options.allowPrivateTargets ? connect : guardedConnector(connect), keepAliveTimeout: 30_000 });
  }

  /**
   * Dispatches straight to undici's handler interface: no response stream, async iterator or
   * AbortSignal per attempt, which were a large part of a delivery's CPU. The deadline timer settles
   * the attempt as a timeout at once, whatever stage it is in, and aborts the request.
   */
  send(req: SendRequest): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const target = this.target(req.url);
    if (typeof target === 'string') return Promise.resolve({ ok: false, status: null, headers: null, body: null, timeMs: elapsed(), error: target, timedOut: false });
    const max = this.maxResponseBytes;
    const timeoutError = `timeout: no complete response within ${this.options.timeoutMs} ms`;

    return new Promise((resolve) => {
      let settled = false;
      let timedOut = false;
      let controller: Dispatcher.DispatchController | null = null;
      let status: number | null = null;
      let headers: Record<string, string> | null = null;
      const kept: Buffer[] = [];
      let size = 0;
      const finish = (result: SendResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(result);
      };
      const fail = (error: string) => finish({ ok: false, status, headers, body: null, timeMs: elapsed(), error, timedOut });
      // The whole answer, or as much of its body as is kept.
      const answered = () => {
        const ok = status !== null && status >= 200 && status < 300;
        // PostgreSQL text and jsonb cannot hold NUL.
        const body = Buffer.concat(kept).toString('utf8').replace(/\u0000/g, '\uFFFD');
        finish({ ok, status, headers, body, timeMs: elapsed(), error: ok ? null : `HTTP ${status}${status! >= 300 && status! < 400 ? ' (redirects are not followed)' : ''}`, timedOut: false });
      };
      const timer = setTimeout(() => {
        timedOut = true;
        controller?.abort(new DeliveryTimeout());
        fail(timeoutError);
      }, this.options.timeoutMs);

      try {
        this.agent.dispatch(
          { origin: target.origin, path: target.path, method: 'POST', headers: req.headers, body: req.body },
          {
            onRequestStart: (c) => {
              controller = c;
              if (timedOut) c.abort(new DeliveryTimeout());
            },
            onResponseStart: (_c, statusCode, responseHeaders) => {
              if (statusCode < 200) return; // 1xx interim answers
              status = statusCode;
              headers = flattenHeaders(responseHeaders);
            },
            onResponseData: (c, chunk) => {
              if (size < max) kept.push(chunk.subarray(0, max - size));
              size += chunk.length;
              if (size > max) {
                answered();
                c.abort(new BodyTooLarge());
              }
            },
            onResponseEnd: answered,
            onResponseError: (_c, error) => fail(timedOut ? timeoutError : describeError(error)),
          },
        );
      } catch (error) {
        fail(describeError(error));
      }
    });
  }

  private target(url: string): Target {
    let target = this.targets.get(url);
    if (target === undefined) {
      const refused = checkTargetUrl(url, this.options.allowPrivateTargets);
      if (refused !== null) target = refused;
      else {
        const { origin, pathname, search } = new URL(url);
        target = { origin, path: pathname + search };
      }
      if (this.targets.size >= MAX_TARGETS) this.targets.clear();
      this.targets.set(url, target);
    }
    return target;
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name] = (Array.isArray(value) ? value.join(', ') : value).replace(/\u0000/g, '');
  }
  return out;
}

const TLS_CODES = /^(?:CERT_|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO_|ERR_TLS_|ERR_SSL_|EPROTO$)/;

/** A short, readable reason for a failed attempt; never includes headers or the body. */
export function describeError(error: unknown): string {
  const e = error as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (error instanceof RefusedAddressError) return error.message;
  if (e.cause instanceof RefusedAddressError) return e.cause.message;
  const code = e.code ?? e.cause?.code ?? '';
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
    case 'EPIPE':
      return 'connection reset by the receiver';
    case 'UND_ERR_SOCKET':
      return 'connection closed by the receiver before a complete response';
    case 'ENOTFOUND':
      return 'DNS lookup failed: host not found';
    case 'EAI_AGAIN':
      return 'DNS lookup failed: temporary failure';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
    case 'ETIMEDOUT':
      return 'timeout';
  }
  if (TLS_CODES.test(code)) return `TLS error: ${(e.message ?? code).slice(0, 160)}`;
  return `request failed: ${(code || e.message || 'unknown error').slice(0, 160)}`;
}
