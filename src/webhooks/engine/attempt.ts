import type { AppContext } from '../../context.js';
import { signingSecrets } from '../endpoints/store.js';
import { sign } from '../sign.js';
import type { ClaimedDelivery } from './claim.js';
import { afterFailure } from './schedule.js';
import type { SendResult, Sender } from './sender.js';

export const USER_AGENT = 'svc-webhooks/1.0';

/**
 * What one claimed row came to, ready to be written. `attempted` is false when no request was
 * made (the endpoint turned inactive before the attempt).
 */
export interface Outcome {
  id: string;
  endpointId: string;
  /** The endpoint's count of consecutive failed deliveries when the row was claimed. */
  endpointFailures: number;
  claimedAttempt: number;
  /** The lease the row was claimed with; null for a row held by a row lock (held-claim.ts). */
  lease: Date | null;
  attempted: boolean;
  status: 'success' | 'pending' | 'failed' | 'disabled';
  nextAttemptAt: Date | null;
  attemptedAt: Date;
  error: string | null;
  responseStatus: number | null;
  responseTimeMs: number | null;
  requestHeaders: Record<string, string> | null;
  responseBody: string | null;
  responseHeaders: Record<string, string> | null;
}

/** The Standard Webhooks headers (spec 6.2); `webhook-id` is the delivery id, so retries reuse it. */
export function deliveryHeaders(secrets: string[], deliveryId: string, at: Date, body: string): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'webhook-id': deliveryId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': sign(secrets, deliveryId, timestamp, body),
  };
}

/**
 * Every outcome is built here, with the same fields in the same order: one object shape for the hot
 * path (spreading partial objects over each other made each outcome a slow dictionary object).
 */
function outcomeOf(
  delivery: ClaimedDelivery,
  attemptedAt: Date,
  result: Pick<Outcome, 'attempted' | 'status' | 'nextAttemptAt' | 'error'>,
  requestHeaders: Record<string, string> | null = null,
  response: SendResult | null = null,
): Outcome {
  return {
    id: delivery.id,
    endpointId: delivery.endpointId,
    endpointFailures: delivery.endpointFailures,
    claimedAttempt: delivery.attempt,
    lease: delivery.lease,
    attempted: result.attempted,
    status: result.status,
    nextAttemptAt: result.nextAttemptAt,
    attemptedAt,
    error: result.error,
    responseStatus: response ? response.status : null,
    responseTimeMs: response ? response.timeMs : null,
    requestHeaders,
    responseBody: response ? response.body : null,
    responseHeaders: response ? response.headers : null,
  };
}

/** Makes one attempt for a claimed row (or none, if its endpoint is no longer active); never throws. */
export async function runAttempt(ctx: AppContext, sender: Sender, delivery: ClaimedDelivery): Promise<Outcome> {
  const attemptedAt = ctx.clock.now();
  if (!delivery.endpointActive) return outcomeOf(delivery, attemptedAt, { attempted: false, status: 'disabled', nextAttemptAt: null, error: null });

  const failed = (error: string, headers: Record<string, string> | null = null, response: SendResult | null = null): Outcome => {
    const next = afterFailure(ctx.config.retryScheduleMs, delivery.attempt + 1, attemptedAt);
    return outcomeOf(delivery, attemptedAt, { attempted: true, status: next.status, nextAttemptAt: next.nextAttemptAt, error }, headers, response);
  };

  if (delivery.body === null) return failed('the event of this delivery no longer exists');
  let headers: Record<string, string>;
  try {
    headers = deliveryHeaders(signingSecrets(ctx.secrets, delivery, attemptedAt), delivery.id, attemptedAt, delivery.body);
  } catch {
    return failed('the signing secret cannot be decrypted: check SVC_MASTER_KEY');
  }

  ctx.metrics.attemptStarted();
  const result = await sender.send({ url: delivery.url, headers, body: delivery.body });
  ctx.metrics.attemptFinished(result);
  if (result.ok) return outcomeOf(delivery, attemptedAt, { attempted: true, status: 'success', nextAttemptAt: null, error: null }, headers, result);
  return failed(result.error ?? `HTTP ${result.status}`, headers, result);
}
