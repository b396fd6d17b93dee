import type { Config } from '../../lib/config.js';
import type { Clock } from '../../lib/clock.js';
import type { SecretBox } from '../../lib/secretbox.js';
import type { Metrics } from '../../ops/metrics.js';
import { tracing } from '../../lib/trace.js';
import { signingSecrets } from './secrets.js';
import { sign } from './sign.js';
import { extraHeaders, type ExtraHeaders } from './extra-headers.js';
import type { Attempted, Deferred, Disabled, Job, Outcome } from './job.js';
import { afterFailure, retryAfterMs } from './schedule.js';
import type { SendResult, Sender } from '../destinations/sender.js';

export const USER_AGENT = 'svc-webhooks/1.0';
/** Every delivery's body is the event's JSON. */
export const CONTENT_TYPE = 'application/json';

/** What an attempt needs besides its job: built once per worker. */
export interface AttemptDeps {
  clock: Clock;
  secrets: SecretBox;
  sender: Sender;
  config: Pick<Config, 'retryScheduleMs'>;
  metrics: Pick<Metrics, 'attemptStarted' | 'attemptFinished'>;
}

/** The Standard Webhooks headers (docs/receiving-webhooks.md#what-arrives); `webhook-id` is the delivery id, so retries reuse it. */
export function deliveryHeaders(secrets: string[], deliveryId: string, at: Date, body: string): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    'content-type': CONTENT_TYPE,
    'user-agent': USER_AGENT,
    'webhook-id': deliveryId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': sign(secrets, deliveryId, timestamp, body),
  };
}

/**
 * What the delivery log keeps of a request sent (migrations/016): its signature, from which and the
 * attempt's row the standard headers are rebuilt, and the endpoint's own headers, values redacted.
 */
interface LoggedRequest {
  signature: string;
  extra: Record<string, string> | null;
}

/**
 * Every outcome is built here, each kind with the same fields in the same order: one object shape
 * per kind for the hot path (spreading partial objects over each other made each outcome a slow
 * dictionary object).
 */
function attempted(
  job: Job,
  attemptedAt: Date,
  result: Pick<Attempted, 'status' | 'nextAttemptAt' | 'error'>,
  request: LoggedRequest | null = null,
  response: SendResult | null = null,
): Attempted {
  return {
    kind: 'attempted',
    id: job.id,
    endpointId: job.endpointId,
    endpointFailures: job.endpointFailures,
    claimedAttempt: job.attempt,
    mark: job.mark,
    attemptedAt,
    status: result.status,
    nextAttemptAt: result.nextAttemptAt,
    error: result.error,
    responseStatus: response ? response.status : null,
    responseTimeMs: response ? response.timeMs : null,
    requestSignature: request ? request.signature : null,
    requestHeaders: request ? request.extra : null,
    responseBody: response ? response.body : null,
    responseHeaders: response ? response.headers : null,
    timedOut: response ? response.timedOut : false,
  };
}

/** What an outcome without an attempt says of its job. */
function about(job: Job, now: Date) {
  return { id: job.id, endpointId: job.endpointId, endpointFailures: job.endpointFailures, claimedAttempt: job.attempt, mark: job.mark, attemptedAt: now };
}

/** A job put off without an attempt, due again at `until` (its endpoint busy or rate limited). */
export function deferred(job: Job, until: Date, now: Date): Deferred {
  return { kind: 'deferred', ...about(job, now), status: 'pending', nextAttemptAt: until };
}

/** A job whose endpoint is no longer active: no request, the row ends disabled. */
function disabled(job: Job, now: Date): Disabled {
  return { kind: 'disabled', ...about(job, now), status: 'disabled' };
}

/**
 * Makes one attempt for a taken job (or none, if its endpoint is no longer active); never throws.
 * While tracing is on, the attempt has a span (lib/trace.ts), whose traceparent goes to an endpoint
 * that asked for it.
 */
export function runAttempt(deps: AttemptDeps, job: Job): Promise<Outcome> {
  const traced = tracing();
  if (traced === null) return attempt(deps, job, null);
  return traced.attempt(job, (traceparent) => attempt(deps, job, traceparent));
}

async function attempt(deps: AttemptDeps, job: Job, traceparent: string | null): Promise<Outcome> {
  const attemptedAt = deps.clock.now();
  if (!job.endpointActive) return disabled(job, attemptedAt);

  const failed = (error: string, request: LoggedRequest | null = null, response: SendResult | null = null): Attempted => {
    const wait = response ? retryAfterMs(response.status, response.headers, attemptedAt) : null;
    const next = afterFailure(deps.config.retryScheduleMs, job.attempt + 1, attemptedAt, wait);
    return attempted(job, attemptedAt, { status: next.status, nextAttemptAt: next.nextAttemptAt, error }, request, response);
  };

  if (job.body === null) return failed('the event of this delivery no longer exists');
  let headers: Record<string, string>;
  try {
    headers = deliveryHeaders(signingSecrets(deps.secrets, { secret_enc: job.secretEnc, previous_secret_enc: job.previousSecretEnc, previous_secret_expires_at: job.previousSecretExpiresAt }, attemptedAt), job.id, attemptedAt, job.body);
  } catch {
    return failed('the signing secret cannot be decrypted: check SVC_MASTER_KEY');
  }
  const logged: LoggedRequest = { signature: headers['webhook-signature'], extra: null };
  if (job.headersEnc !== null) {
    let extra: ExtraHeaders;
    try {
      extra = extraHeaders(deps.secrets, job.headersEnc);
    } catch {
      return failed("the endpoint's headers cannot be decrypted: check SVC_MASTER_KEY");
    }
    headers = { ...headers, ...extra.sent };
    logged.extra = extra.logged;
  }
  if (traceparent !== null) headers.traceparent = traceparent;

  let url = job.url;
  if (job.urlEnc !== null) {
    try {
      url = deps.secrets.decrypt(job.urlEnc);
    } catch {
      return failed("the endpoint's URL credentials cannot be decrypted: check SVC_MASTER_KEY", logged);
    }
  }
  const route = job.exchange === null && job.routingKey === null && job.subject === null ? undefined : { exchange: job.exchange, routingKey: job.routingKey, subject: job.subject };

  deps.metrics.attemptStarted();
  const result = await deps.sender.send({ url, headers, body: job.body, eventType: job.eventType, route });
  deps.metrics.attemptFinished(result);
  if (result.ok) return attempted(job, attemptedAt, { status: 'success', nextAttemptAt: null, error: null }, logged, result);
  return failed(result.error ?? `HTTP ${result.status}`, logged, result);
}
