import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import type { RouteOptions } from 'fastify';
import { ERROR_MEANINGS, ERROR_STATUS, type ErrorCode } from '../../http/errors.js';
import { accessDescription } from './access.js';
import { IDEMPOTENCY_KEY, IDEMPOTENT_REPLAYED, IdempotencyKey, IdempotentReplayed } from '../../http/idempotency/header.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Error codes this route gives beyond those every route of its kind gives (which are derived,
     * see routeErrorCodes), e.g. `['ENDPOINT_INACTIVE']`. The OpenAPI document declares them all.
     */
    errors?: ErrorCode[];
  }
}

/** A request header that every POST under /v1 honours, the error codes it adds and the headers it adds to successes. */
export interface PostHeader {
  /** As clients write it, e.g. `Idempotency-Key`. */
  name: string;
  schema: TSchema;
  errors: ErrorCode[];
  /** Response headers a success may carry because of it, as the document's header objects. */
  responseHeaders?: Record<string, { description: string; schema: Record<string, unknown> }>;
}

/**
 * Headers every POST under /v1 honours: every POST validates them, and the OpenAPI document shows
 * them with their errors. Idempotency keys: docs/idempotency.md, src/http/idempotency/.
 */
export const POST_HEADERS: readonly PostHeader[] = [
  {
    name: IDEMPOTENCY_KEY,
    schema: IdempotencyKey,
    errors: ['IDEMPOTENCY_IN_PROGRESS', 'IDEMPOTENCY_MISMATCH'],
    responseHeaders: { [IDEMPOTENT_REPLAYED]: IdempotentReplayed },
  },
];

/** Methods whose requests Fastify reads a body of (so 400 on bad JSON, 413 and 415 apply). */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

type RouteFacts = Pick<RouteOptions, 'method' | 'url' | 'config'>;

const methodOf = (route: RouteFacts) => (Array.isArray(route.method) ? route.method[0] : route.method).toUpperCase();

/**
 * The error codes a route can answer with, derived from what it is: any request can be malformed
 * (400: a NUL or bad UTF-8 in its URL, http/url.ts, before any route runs); every /v1 route
 * authenticates (401), counts against a rate limit (429) and reads the database (503); one with a
 * permission, a workspace or a user to check can refuse (403); a path parameter can name nothing
 * (404); a request body can be too large (413) or not JSON (415). The route's own `config.errors`
 * and the POST headers add theirs.
 */
export function routeErrorCodes(route: RouteFacts, postHeaders: readonly PostHeader[] = POST_HEADERS): ErrorCode[] {
  const method = methodOf(route);
  const auth = route.config?.auth;
  const api = route.url.startsWith('/v1/');
  const pathParams = route.url.includes('/:');
  const body = BODY_METHODS.has(method);
  const codes = new Set<ErrorCode>(['VALIDATION']);
  if (api) codes.add('UNAUTHENTICATED');
  if (auth && auth.scope !== 'any' && auth.scope !== 'none') codes.add('FORBIDDEN');
  if (pathParams) codes.add('NOT_FOUND');
  if (body) codes.add('PAYLOAD_TOO_LARGE').add('UNSUPPORTED_MEDIA_TYPE');
  if (api) codes.add('RATE_LIMITED');
  codes.add('INTERNAL');
  if (api) codes.add('UNAVAILABLE');
  if (api && method === 'POST') for (const header of postHeaders) for (const code of header.errors) codes.add(code);
  for (const code of route.config?.errors ?? []) codes.add(code);
  return [...codes].sort((a, b) => ERROR_STATUS[a] - ERROR_STATUS[b]);
}

/** Response schemas of a route's error codes: the Error envelope, described by the codes of each status. */
export function errorResponses(codes: ErrorCode[]): Record<number, TSchema> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => [status, { ...Type.Ref('ErrorResponse'), description: list.map((c) => `${c}: ${ERROR_MEANINGS[c]}`).join('. ') }]),
  );
}

/** A route's header schema with the POST headers added (header names are lower case in Fastify's schemas). */
function withPostHeaders(headers: TObject | undefined, postHeaders: readonly PostHeader[]): TObject {
  const added = Object.fromEntries(postHeaders.map((h) => [h.name.toLowerCase(), Type.Optional(h.schema)]));
  return Type.Object({ ...(headers?.properties ?? {}), ...added });
}

/**
 * Adds the POST headers to every POST under /v1 as the route is added, before Fastify compiles it,
 * so validation and the document read the same header schema.
 */
export function addPostHeaders(route: RouteOptions, postHeaders: readonly PostHeader[] = POST_HEADERS): void {
  const schema = route.schema as { headers?: TObject } | undefined;
  if (postHeaders.length === 0 || !route.url.startsWith('/v1/') || methodOf(route) !== 'POST') return;
  route.schema = { ...schema, headers: withPostHeaders(schema?.headers, postHeaders) };
}

/**
 * The route's schema as the document shows it: its error responses and a description added. Only the document needs
 * them: error bodies come from the one error handler, and leaving them out of the route schemas
 * spares Fastify a serializer per route and status.
 */
export function documentedSchema(route: RouteFacts & { schema?: unknown }, postHeaders: readonly PostHeader[] = POST_HEADERS): Record<string, unknown> | undefined {
  const schema = route.schema as (Record<string, unknown> & { response?: Record<string, unknown>; description?: string }) | undefined;
  if (!schema) return undefined;
  // Every operation's description says who may call it, after what the route says of itself.
  const description = [schema.description, accessDescription(route.config?.auth)].filter(Boolean).join('\n\n');
  return { ...schema, description, response: { ...errorResponses(routeErrorCodes(route, postHeaders)), ...schema.response } };
}
