import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DatabaseUnavailableError } from '../db/db.js';
import { newId } from '../lib/ids.js';
import { ApiError, type ErrorCode } from './errors.js';
import { describeValidationErrors } from './validation-messages.js';

/** PostgreSQL and socket failures that mean the store is unreachable rather than a bug. */
const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', '57P01', '57P03', '53300', '08006', '08001', '08003']);

/** Seconds a client is asked to wait after a 503 (a database outage, a stop in progress). */
export const RETRY_AFTER_SECONDS = 2;

/** PostgreSQL's disk_full: a table or index could not grow. The transaction is rolled back whole. */
const DISK_FULL = '53100';

/**
 * What a refused write says when the database's disk is full: the folder, when the service runs its
 * own server (`dataDir`), else the database server's disk.
 */
function diskFull(dataDir: string | null): ApiError {
  const where = dataDir ? `the disk of the data folder ${dataDir}` : "the database server's disk";
  return new ApiError('UNAVAILABLE', `Writes are refused for now: ${where} is full. Reads go on; writes resume once space is freed.`);
}

function toApiError(error: FastifyError & { code?: string }, dataDir: string | null): ApiError {
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
  if (error.code === DISK_FULL) return diskFull(dataDir);
  if (error instanceof DatabaseUnavailableError || (error.code && UNAVAILABLE_CODES.has(error.code))) {
    return new ApiError('UNAVAILABLE', 'The service is temporarily unavailable: retry after a short wait.');
  }
  return new ApiError('INTERNAL', 'An unexpected error occurred.');
}

/**
 * One handler turns every error into `{error: {code, message, requestId}}`; 5xx internals stay in
 * the log. `dataDir`: the embedded server's folder, named when its disk is full.
 */
export function registerErrorHandler(app: FastifyInstance, options: { dataDir?: string | null } = {}): void {
  app.setErrorHandler((error: FastifyError & { code?: string }, request, reply) => {
    const apiError = toApiError(error, options.dataDir ?? null);
    // A full disk is a line per refused write, without a stack: it is no bug of the service.
    if (error.code === DISK_FULL) request.log.warn({ reason: error.message }, apiError.message);
    // The database's outages are logged once each (server/outages.ts), not per request refused.
    else if (apiError.code === 'UNAVAILABLE') request.log.debug({ reason: error.message }, 'request refused: the database is unavailable');
    else if (apiError.status >= 500) request.log.error({ err: error }, 'request failed');
    if (apiError.code === 'UNAUTHENTICATED') reply.header('WWW-Authenticate', 'Bearer');
    if (apiError.status === 503) reply.header('Retry-After', String(RETRY_AFTER_SECONDS));
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

/**
 * Errors the router raises before any hook runs (Fastify's `frameworkErrors`): a path that is not
 * valid percent-encoding is a 400; a path parameter over the router's length limit is an id that
 * cannot exist, so a 404 like any other unknown id.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const apiError =
    error.code === 'FST_ERR_BAD_URL'
      ? new ApiError('VALIDATION', 'The URL is not valid: it holds a malformed percent-encoding.')
      : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? new ApiError('NOT_FOUND', 'Not found.')
        : new ApiError('INTERNAL', 'An unexpected error occurred.');
  if (apiError.status >= 500) request.log.error({ err: error }, 'request failed');
  void reply
    .status(apiError.status)
    .header('Request-Id', request.id)
    .send({ error: { code: apiError.code, message: apiError.message, requestId: request.id } });
}

const CLIENT_ERROR_MESSAGES: Record<string, string> = {
  HPE_HEADER_OVERFLOW: 'Request headers are too large.',
  ERR_HTTP_REQUEST_TIMEOUT: 'The request was not received in time.',
};

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (CR, LF or NUL in a header, oversized
 * headers, a malformed request line or chunk): the same envelope as every other error, on a closing
 * connection. Only the error code is logged: the parser's error holds the raw request bytes, and
 * with them any credential.
 */
export function clientErrorHandler(log: FastifyBaseLogger, error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const requestId = newId('req');
  log.debug({ code: error.code, requestId }, 'malformed HTTP request refused');
  if (!socket.writable) return void socket.destroy();
  const message = CLIENT_ERROR_MESSAGES[error.code ?? ''] ?? 'Malformed HTTP request.';
  const body = JSON.stringify({ error: { code: 'VALIDATION', message, requestId } });
  socket.end(
    'HTTP/1.1 400 Bad Request\r\n' +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `Request-Id: ${requestId}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}
