import type { FastifyError, FastifyInstance } from 'fastify';
import { ApiError, type ErrorCode } from './errors.js';
import { describeValidationErrors } from './validation.js';

/** PostgreSQL and socket failures that mean the store is unreachable rather than a bug. */
const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', '57P01', '57P03', '53300', '08006', '08001', '08003']);

function toApiError(error: FastifyError & { code?: string }): ApiError {
  if (error instanceof ApiError) return error;
  if (error.validation) {
    const { message, details } = describeValidationErrors(error.validation, error.validationContext ?? 'request');
    return new ApiError('VALIDATION', message, details);
  }
  const status = error.statusCode ?? 500;
  if (status === 413) return new ApiError('PAYLOAD_TOO_LARGE', 'Request body is too large.');
  if (status === 415) return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be sent as Content-Type: application/json.');
  if (status === 404) return new ApiError('NOT_FOUND', 'Not found.');
  if (status >= 400 && status < 500) return new ApiError('VALIDATION', error.message);
  if (error.code && UNAVAILABLE_CODES.has(error.code)) return new ApiError('UNAVAILABLE', 'The service is temporarily unavailable.');
  return new ApiError('INTERNAL', 'An unexpected error occurred.');
}

/** One handler turns every error into `{error: {code, message, requestId}}`; 5xx internals stay in the log. */
export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const apiError = toApiError(error);
    if (apiError.status >= 500) request.log.error({ err: error }, 'request failed');
    if (apiError.code === 'UNAUTHENTICATED') reply.header('WWW-Authenticate', 'Bearer');
    const body: { code: ErrorCode; message: string; requestId: string; details?: unknown } = {
      code: apiError.code,
      message: apiError.message,
      requestId: request.id,
    };
    if (apiError.details) body.details = apiError.details;
    return reply.status(apiError.status).send({ error: body });
  });

  app.setNotFoundHandler((request, reply) => {
    return reply.status(404).send({
      error: { code: 'NOT_FOUND', message: `No route ${request.method} ${request.url.split('?')[0]}.`, requestId: request.id },
    });
  });
}
