import { readFileSync } from 'node:fs';
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { exampleId } from '../../http/examples.js';
import { documentedSchema, type PostHeader } from './conventions.js';
import { linkDescriptions } from '../../http/links.js';
import { WEBHOOK_HEADER_PARAMETERS, webhooksSection } from './webhooks.js';

/** The package's name, version and licence: one source for the document's `info`. */
const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string; license: string };

/** Every tag an operation may carry, with the description the reference shows; the tests hold operations to this list. */
export const TAGS = [
  { name: 'Account', description: 'The calling user and credential, and the organizations and workspaces it can act in.' },
  { name: 'Products', description: 'Products of a workspace. Every change emits a product.* event.' },
  {
    name: 'Orders',
    description:
      'Orders of products, with line items snapshotted at creation and a status moved by pay, fulfill, cancel and refund. Every change emits an order.* event; orders are never deleted.',
  },
  { name: 'Events', description: 'The event log of a workspace, newest first. An event is what webhook endpoints receive, byte for byte.' },
  { name: 'Webhook endpoints', description: 'Where events are delivered, with their signing secrets, subscriptions, pause and test pings.' },
  { name: 'Webhook deliveries', description: 'The delivery log: one row per event and endpoint, its attempts, and replays.' },
  { name: 'Notifications', description: "Notices for a personal access token's user, such as an auto-disabled endpoint." },
  { name: 'API keys', description: 'Keys bound to one workspace; managed with an Owner or Admin personal access token.' },
  {
    name: 'Dashboard',
    description: 'Signing in to the dashboard at /dashboard/ with a one-time link, and out again. See docs/dashboard.md.',
  },
  {
    name: 'Webhook events',
    description: 'What the service POSTs to your endpoints: one entry per event type, signed per Standard Webhooks. See docs/receiving-webhooks.md.',
  },
];

const HEADERS = {
  RequestId: { description: 'Id of the request (req_...), also in the body of an error: quote it when asking about a request.', schema: { type: 'string' } },
  RateLimit: { description: 'What is left of the limit: `"default";r=<remaining>;t=<seconds until it refills>`.', schema: { type: 'string' } },
  RateLimitPolicy: { description: 'The limit: `"default";q=<requests>;w=60`.', schema: { type: 'string' } },
  RetryAfter: { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
  WWWAuthenticate: { description: '`Bearer`.', schema: { type: 'string' } },
};

type Operation = { operationId?: string; summary?: string; security?: unknown[]; parameters?: Parameter[]; responses: Record<string, { description?: string; headers?: Record<string, unknown> }> };
type Parameter = { name: string; in: string; schema?: Record<string, unknown>; style?: string; explode?: boolean };
type Document = Record<string, any> & { paths: Record<string, Record<string, Operation>> };

const header = (name: keyof typeof HEADERS) => ({ $ref: `#/components/headers/${name}` });
const IN_WORKSPACE = '/v1/workspaces/{workspaceId}/';

/** Every operation of the document's paths, with its path and method. */
const operationsOf = (doc: Document) =>
  Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })));

/**
 * An operation that exists at both mounts keeps its operationId at `/v1/...`; its twin at
 * `/v1/workspaces/{workspaceId}/...` takes the suffix `InWorkspace`, and says so in its summary.
 */
function distinguishMounts(doc: Document): void {
  const ops = operationsOf(doc);
  const count = new Map<string, number>();
  for (const { op } of ops) if (op.operationId) count.set(op.operationId, (count.get(op.operationId) ?? 0) + 1);
  for (const { path, op } of ops) {
    if (op.operationId && path.startsWith(IN_WORKSPACE) && count.get(op.operationId)! > 1) {
      op.operationId += 'InWorkspace';
      op.summary += ' (workspace in the path)';
    }
  }
}

/**
 * `expand` is validated as text (comma-separated names, see http/expand.ts) and documented as what
 * it is on the wire: an array of the route's names, written comma-separated; a name given twice
 * counts once (docs/api.md#expand). A path parameter that takes an id documents its shape
 * (`x-id-prefix`, see http/mount.ts IdParam); an id of another shape is a 404, not a 400.
 */
function parameterShapes(doc: Document): void {
  for (const { op } of operationsOf(doc)) {
    for (const param of op.parameters ?? []) {
      const names = param.schema?.['x-expand'] as string[] | undefined;
      if (param.in === 'query' && names) {
        param.schema = { type: 'array', items: { type: 'string', enum: names }, examples: [names] };
        param.style = 'form';
        param.explode = false;
      }
      const prefix = param.schema?.['x-id-prefix'] as string | undefined;
      if (param.in === 'path' && prefix && param.schema) {
        const { 'x-id-prefix': _prefix, ...schema } = param.schema;
        param.schema = { ...schema, pattern: `^${prefix}_[0-9a-hjkmnp-tv-z]{26}$`, examples: [exampleId(prefix)] };
      }
    }
  }
}

const SUCCESS: Record<string, string> = { '200': 'OK', '201': 'Created' };

/**
 * A success without a description of its own says what its status says. Request-Id is on every
 * answer; the rate-limit headers on every /v1 answer; Retry-After and WWW-Authenticate where
 * they apply; on a /v1 POST's success, the headers its POST headers add (Idempotent-Replayed).
 */
function responseDetails(doc: Document, postHeaders: readonly PostHeader[]): void {
  const fromPostHeaders = Object.assign({}, ...postHeaders.map((h) => h.responseHeaders ?? {})) as Record<string, unknown>;
  for (const { path, method, op } of operationsOf(doc)) {
    for (const [status, response] of Object.entries(op.responses)) {
      if (response.description === 'Default Response' && SUCCESS[status]) response.description = SUCCESS[status];
      // Every /v1 answer may carry the credential's (or, for a failed authentication, the
      // address's) limit; an operation without a credential (security: []) has none to report on success.
      const limited = path.startsWith('/v1/') && !(op.security?.length === 0 && status.startsWith('2'));
      response.headers = {
        ...response.headers,
        'Request-Id': header('RequestId'),
        ...(limited ? { RateLimit: header('RateLimit'), 'RateLimit-Policy': header('RateLimitPolicy') } : {}),
        ...(path.startsWith('/v1/') && method === 'post' && status.startsWith('2') ? fromPostHeaders : {}),
        ...(status === '429' ? { 'Retry-After': header('RetryAfter') } : {}),
        ...(status === '401' ? { 'WWW-Authenticate': header('WWWAuthenticate') } : {}),
      };
    }
  }
}

/** The document-wide conventions, applied once to the document @fastify/swagger builds from the routes. */
export function completeDocument(doc: Document, postHeaders: readonly PostHeader[]): Document {
  distinguishMounts(doc);
  parameterShapes(doc);
  responseDetails(doc, postHeaders);
  doc.webhooks = webhooksSection();
  doc.components = { ...doc.components, headers: HEADERS, parameters: WEBHOOK_HEADER_PARAMETERS };
  linkDescriptions(doc);
  return doc;
}

/** @fastify/swagger's options: the document's frame around what the routes declare, and its conventions. */
export function swaggerOptions(publicUrl: string, postHeaders: readonly PostHeader[]): FastifyDynamicSwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'svc API',
        version: pkg.version,
        description:
          'A commerce-style API with an event log and signed webhook delivery. Every request carries ' +
          '`Authorization: Bearer <API key or personal access token>`; errors share one envelope; lists are ' +
          'newest first with `nextPageUrl` and `previousPageUrl`. Receiving webhooks: docs/receiving-webhooks.md.',
        license: { name: pkg.license, identifier: pkg.license },
        // A self-hosted service: its operators are the contact, at the address it runs on.
        contact: { name: 'The operators of this service', url: `${publicUrl}/docs` },
      },
      servers: [{ url: publicUrl, description: 'This service (SVC_PUBLIC_URL)' }],
      tags: TAGS,
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'API key (svc_sk_...) or personal access token (svc_pat_...).' },
        },
      },
      security: [{ bearer: [] }],
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (json.$id as string) ?? `def-${i}` },
    transform: ({ schema, url, route }) => ({ schema: documentedSchema(route, postHeaders) ?? schema, url }),
    transformObject: (built) => completeDocument((built as { openapiObject: Document }).openapiObject, postHeaders),
  };
}
