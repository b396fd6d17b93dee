import type { ApiErrorBody, ErrorCode } from './types.js';

/** An answer that is not the service's error envelope (a proxy's page, for one) gets this code. */
export const UNEXPECTED_RESPONSE = 'UNEXPECTED_RESPONSE';

/**
 * A request the service refused or failed: the envelope's `code`, `message`, `requestId` and
 * `details`, with the HTTP `status`. `retryAfter` is the Retry-After of a 429, in seconds.
 */
export class SvcError extends Error {
  override readonly name = 'SvcError';

  constructor(
    readonly status: number,
    readonly code: ErrorCode | typeof UNEXPECTED_RESPONSE,
    message: string,
    readonly requestId: string | null,
    readonly details: ApiErrorBody['details'] = undefined,
    readonly retryAfter: number | null = null,
  ) {
    super(message);
  }

  /** The error of a non-2xx answer, from its envelope (openapi-fetch has already read the body). */
  static fromResponse(response: Response, body: unknown): SvcError {
    const retryAfter = response.headers.get('retry-after');
    const seconds = retryAfter !== null && /^\d+$/.test(retryAfter) ? Number(retryAfter) : null;
    const error = (body as { error?: Partial<ApiErrorBody> } | null)?.error;
    if (error && typeof error.code === 'string' && typeof error.message === 'string') {
      return new SvcError(response.status, error.code, error.message, error.requestId ?? response.headers.get('request-id'), error.details, seconds);
    }
    const message = `HTTP ${response.status} ${response.statusText} without the service's error envelope`;
    return new SvcError(response.status, UNEXPECTED_RESPONSE, message, response.headers.get('request-id'), undefined, seconds);
  }
}
