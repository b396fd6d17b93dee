import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, RouteOptions } from 'fastify';
import { validation } from './errors.js';
import { withHook } from './route-hooks.js';

type Hook = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void;

/** Methods whose requests carry a body Fastify parses. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * A body sent to an operation that takes none (POST /orders/{id}/pay, DELETE ...) is refused like
 * an unknown field of any other body: a typo'd call must not pass as another. No body, an empty one
 * or `{}` is no input at all and is accepted (clients differ in what they send for none).
 */
const refuseBody: Hook = (request, _reply, done) => {
  const body = request.body as unknown;
  if (body === undefined) return done();
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    const fields = Object.keys(body);
    if (fields.length === 0) return done();
    const details = fields.map((field) => ({ path: `body.${field}`, message: `unknown field "${field}"` }));
    return done(validation(`Invalid body: ${details[0].path}: ${details[0].message}.`, details));
  }
  done(validation('Invalid body: body: this operation takes no request body.', [{ path: 'body', message: 'this operation takes no request body' }]));
};

const NO_QUERY = Type.Object({}, { additionalProperties: false });

/**
 * Routes under /v1 declare every input they read. A route without a query schema takes no query
 * parameter, so an unknown one (`GET /v1/orders/{id}?foo=1`) is a 400 naming it, as on the list
 * routes; a route without a body schema takes no body. Register after authorization, so a caller
 * without rights learns nothing from the 400.
 */
export function refuseUndeclaredInput(app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    if (!route.url.startsWith('/v1/')) return;
    const schema = (route.schema ?? {}) as { querystring?: unknown; body?: unknown };
    if (schema.querystring === undefined) route.schema = { ...schema, querystring: NO_QUERY };
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (schema.body === undefined && methods.some((m) => BODY_METHODS.has(m.toUpperCase()))) {
      route.preValidation = withHook(route.preValidation as Hook | Hook[] | undefined, refuseBody) as typeof route.preValidation;
    }
  });
}
