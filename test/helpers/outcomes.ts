import type { Outcome } from '../../src/engine/delivery/job.js';

/**
 * A successful attempt's outcome for a pending row as it stands (its attempt count and due time as
 * the mark), shaped as attempt.ts builds it: for tests that write outcomes without sending anything.
 */
export function successOf(row: { id: string; attempt: number; next_attempt_at: Date }, endpointId: string, at: Date): Outcome {
  return {
    kind: 'attempted',
    id: row.id,
    endpointId,
    endpointFailures: 0,
    claimedAttempt: row.attempt,
    mark: row.next_attempt_at,
    status: 'success',
    nextAttemptAt: null,
    attemptedAt: at,
    error: null,
    responseStatus: 200,
    responseTimeMs: 3,
    requestSignature: 'v1,c2lnbmF0dXJl',
    requestHeaders: null,
    responseBody: '',
    responseHeaders: { 'content-length': '0' },
    timedOut: false,
  };
}
