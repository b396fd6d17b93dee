import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, defaultTextMapGetter, trace, type Span, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator, isTracingSuppressed } from '@opentelemetry/core';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { failSpan } from './fail.js';

interface RequestSpan {
  span: Span;
  /** The error a 5xx answer was made of (recorded once the status is known). */
  error: unknown;
  ended: boolean;
}

const propagator = new W3CTraceContextPropagator();

/**
 * A span per request, named by its method and route template (`POST /v1/products`, never the raw
 * URL), with the status and the workspace the request was bound to. A caller's `traceparent`
 * continues its trace. Nothing of the headers' values, the query or the body is kept.
 *
 * The span is made current from the first onRequest hook on, so the statements and the outbox
 * write of the request's hooks and handler are its children (a body that arrives after the headers
 * included: test/traces.test.ts).
 */
export function registerRequestSpans(app: FastifyInstance, tracer: Tracer): void {
  const spans = new WeakMap<FastifyRequest, RequestSpan>();

  const end = (request: FastifyRequest, status: number | null) => {
    const held = spans.get(request);
    if (!held || held.ended) return;
    held.ended = true;
    const { span } = held;
    if (status !== null) span.setAttribute('http.response.status_code', status);
    const workspace = (request as { workspace?: { id: string } | null }).workspace;
    if (workspace) span.setAttribute('svc.workspace.id', workspace.id);
    if (status === null) span.setStatus({ code: SpanStatusCode.ERROR, message: 'the client closed the request before its answer' });
    else if (status >= 500) {
      if (held.error !== null) failSpan(span, held.error);
      else span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  };

  app.addHook('onRequest', (request, _reply, done) => {
    // A request made inside untraced() (the warm-up's, through inject) has no span.
    if (isTracingSuppressed(context.active())) return done();
    const route = request.routeOptions.url;
    const parent = propagator.extract(ROOT_CONTEXT, request.headers, defaultTextMapGetter);
    const span = tracer.startSpan(
      route ? `${request.method} ${route}` : request.method,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': request.method, ...(route ? { 'http.route': route } : {}), 'svc.request.id': request.id },
      },
      parent,
    );
    const current = trace.setSpan(parent, span);
    spans.set(request, { span, error: null, ended: false });
    context.with(current, done);
  });

  app.addHook('onError', (request, _reply, error, done) => {
    const held = spans.get(request);
    if (held) held.error = error;
    done();
  });

  app.addHook('onResponse', (request, reply, done) => {
    end(request, reply.statusCode);
    done();
  });

  app.addHook('onRequestAbort', (request, done) => {
    end(request, null);
    done();
  });
}
