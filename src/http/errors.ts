import { Type } from '@sinclair/typebox';

/** The closed list of error codes and the status each one carries (docs/api.md#errors). */
export const ERROR_STATUS = {
  VALIDATION: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  ENDPOINT_INACTIVE: 409,
  INVALID_STATE: 409,
  IDEMPOTENCY_IN_PROGRESS: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  IDEMPOTENCY_MISMATCH: 422,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorDetail {
  path: string;
  message: string;
}

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
  ) {
    super(message);
    this.status = ERROR_STATUS[code];
  }
}

export const validation = (message: string, details?: ErrorDetail[]) => new ApiError('VALIDATION', message, details);
export const notFound = (what: string) => new ApiError('NOT_FOUND', `No such ${what}.`);
export const forbidden = (message: string) => new ApiError('FORBIDDEN', message);

export const ErrorBody = Type.Object(
  {
    error: Type.Object({
      code: Type.Union(Object.keys(ERROR_STATUS).map((c) => Type.Literal(c))),
      message: Type.String({ examples: ['Invalid body: body.price.currency: must be an ISO 4217 currency code such as USD, EUR or JPY (upper case).'] }),
      requestId: Type.String({ examples: ['req_01jq2m9h4w8a2e6j0n4r8v2y6c'] }),
      details: Type.Optional(
        Type.Array(
          Type.Object({
            path: Type.String({ examples: ['body.price.currency'] }),
            message: Type.String({ examples: ['must be an ISO 4217 currency code such as USD, EUR or JPY (upper case)'] }),
          }),
        ),
      ),
    }),
  },
  // Not "Error": a generated TypeScript client would shadow the global Error class with it.
  { $id: 'ErrorResponse', description: 'The error envelope of every 4xx and 5xx response.' },
);

/** What each code means: the descriptions of the OpenAPI document's error responses. */
export const ERROR_MEANINGS: Record<ErrorCode, string> = {
  VALIDATION: 'the request is malformed or fails validation; `details` names each field',
  UNAUTHENTICATED: 'missing, malformed, unknown, revoked or expired credential (with WWW-Authenticate: Bearer)',
  FORBIDDEN: 'the credential lacks the permission, the workspace membership or the kind this operation needs',
  NOT_FOUND: 'no such resource in this workspace (ids of other workspaces are not found either)',
  ENDPOINT_INACTIVE: 'the webhook endpoint is paused, auto-disabled or deleted; re-enable it first',
  INVALID_STATE: "the action is not allowed from the resource's current status; the message names the status and the actions allowed from it",
  IDEMPOTENCY_IN_PROGRESS: 'a request with this Idempotency-Key is still running; retry once it has finished to get its response',
  PAYLOAD_TOO_LARGE: 'the request body is over the limit (SVC_BODY_LIMIT)',
  UNSUPPORTED_MEDIA_TYPE: 'a request body that is not application/json',
  IDEMPOTENCY_MISMATCH: 'this Idempotency-Key was used in the last 24 hours with another method, path or body; use a new key for a new request',
  RATE_LIMITED: "over the credential's rate limit, or too many failed authentications from one address; see Retry-After",
  INTERNAL: 'an unexpected fault; the message never tells more, the Request-Id finds it in the log',
  UNAVAILABLE: 'the database is unreachable; retry later',
};
