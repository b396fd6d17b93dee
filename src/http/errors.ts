import { Type } from '@sinclair/typebox';

/** The closed list of error codes and the status each one carries (DESIGN "Errors"). */
export const ERROR_STATUS = {
  VALIDATION: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  ENDPOINT_INACTIVE: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
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
      message: Type.String(),
      requestId: Type.String(),
      details: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
    }),
  },
  { $id: 'Error', description: 'The error envelope of every 4xx and 5xx response.' },
);

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'VALIDATION: the request is malformed or fails validation',
  401: 'UNAUTHENTICATED: missing, malformed, unknown, revoked or expired credential',
  403: 'FORBIDDEN: the credential lacks the permission or the workspace',
  404: 'NOT_FOUND: no such resource in this workspace',
  409: 'ENDPOINT_INACTIVE: the webhook endpoint is not active',
  413: 'PAYLOAD_TOO_LARGE: the request body is over the limit',
  415: 'UNSUPPORTED_MEDIA_TYPE: the request body is not application/json',
  429: 'RATE_LIMITED: over the credential\'s rate limit; see Retry-After',
  500: 'INTERNAL: unexpected fault',
  503: 'UNAVAILABLE: the store is unreachable',
};

/** Error responses for a route's schema: the common ones plus any the route adds. */
export function errorResponses(...extra: number[]): Record<number, unknown> {
  const statuses = [400, 401, 403, 404, 429, 500, ...extra];
  return Object.fromEntries(
    statuses.map((s) => [s, { ...Type.Ref('Error'), description: ERROR_DESCRIPTIONS[s] }]),
  );
}
