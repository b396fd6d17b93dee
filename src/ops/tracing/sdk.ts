import { SpanKind, context, trace, type Link, type SpanContext, type Tracer } from '@opentelemetry/api';
import { parseTraceParent, suppressTracing } from '@opentelemetry/core';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, ConsoleSpanExporter, NodeTracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import { ConfigError } from '../../lib/config.js';
import type { AttemptResult, AttemptSubject, Ending, Tracing } from '../../lib/trace-types.js';
import { failSpan } from './fail.js';
import { registerRequestSpans } from './requests.js';

/** The service's name in traces unless OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names another. */
export const SERVICE_NAME = 'svc';

/**
 * The exporter the environment asks for: OTLP over HTTP, as protobuf (the standard default) or
 * JSON (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL `http/json`), or the
 * console (OTEL_TRACES_EXPORTER=console). The exporters read their own OTEL_EXPORTER_OTLP_*
 * settings (endpoint, headers, time-out, compression).
 */
async function exporterOf(env: NodeJS.ProcessEnv): Promise<SpanExporter> {
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() || 'otlp';
  if (exporter === 'console') return new ConsoleSpanExporter();
  if (exporter !== 'otlp') throw new ConfigError(`OTEL_TRACES_EXPORTER must be otlp, console or none, got "${env.OTEL_TRACES_EXPORTER}"`);
  const variable = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = env[variable]?.trim() || 'http/protobuf';
  if (protocol === 'http/json') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter();
  if (protocol === 'http/protobuf') return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
  throw new ConfigError(`${variable} must be http/protobuf or http/json, got "${env[variable]}"`);
}

/** A W3C traceparent of a span context. */
function traceparentOf(span: SpanContext): string {
  return `00-${span.traceId}-${span.spanId}-0${(span.traceFlags & 1).toString(16)}`;
}

/** The operation of a statement, its span's name: its first word (SELECT, INSERT, WITH, BEGIN, ...). */
function operationOf(sql: string): string {
  const match = /^\s*([A-Za-z]+)/.exec(sql);
  return match ? match[1].toUpperCase() : 'SQL';
}

/** The SDK started from the environment: a tracer provider with a batch exporter, registered as the process's. */
export async function startSdk(env: NodeJS.ProcessEnv): Promise<Tracing> {
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': SERVICE_NAME }))
    .merge(detectResources({ detectors: [envDetector] }));
  // The batch processor reads OTEL_BSP_*; the sampler OTEL_TRACES_SAMPLER(_ARG).
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(await exporterOf(env))] });
  provider.register();
  const tracer = provider.getTracer('svc');
  return new SdkTracing(provider, tracer);
}

class SdkTracing implements Tracing {
  constructor(
    private readonly provider: NodeTracerProvider,
    private readonly tracer: Tracer,
  ) {}

  requests(app: Parameters<Tracing['requests']>[0]): void {
    registerRequestSpans(app, this.tracer);
  }

  current(): string | null {
    const span = trace.getSpan(context.active());
    return span ? traceparentOf(span.spanContext()) : null;
  }

  statement(sql: string): Ending | null {
    const parent = context.active();
    if (!trace.getSpan(parent)) return null;
    const operation = operationOf(sql);
    const span = this.tracer.startSpan(
      operation,
      { kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'postgresql', 'db.operation.name': operation, 'db.query.text': sql } },
      parent,
    );
    return {
      end(error?: unknown) {
        if (error !== undefined) failSpan(span, error);
        span.end();
      },
    };
  }

  write<T>(eventTypes: string[], run: () => Promise<T>, deliveries: (result: T) => number): Promise<T> {
    const types = [...new Set(eventTypes)].sort();
    const attributes = { 'svc.event.type': types.join(','), 'svc.event.count': eventTypes.length };
    return this.tracer.startActiveSpan('outbox.write', { kind: SpanKind.INTERNAL, attributes }, async (span) => {
      try {
        const result = await run();
        span.setAttribute('svc.delivery.count', deliveries(result));
        return result;
      } catch (error) {
        failSpan(span, error);
        throw error;
      } finally {
        span.end();
      }
    });
  }

  attempt<T extends AttemptResult>(job: AttemptSubject, run: (traceparent: string | null) => Promise<T>): Promise<T> {
    const cause = job.trace === null ? null : parseTraceParent(job.trace);
    const links: Link[] = cause ? [{ context: cause }] : [];
    const attributes = {
      'svc.workspace.id': job.workspaceId,
      'svc.endpoint.id': job.endpointId,
      'svc.delivery.id': job.id,
      'svc.event.id': job.eventId,
      'svc.event.type': job.eventType,
      'svc.attempt': job.attempt + 1,
    };
    // A trace of its own: the request that caused it may be long over (retries come hours later).
    return this.tracer.startActiveSpan('webhook.attempt', { kind: SpanKind.CLIENT, root: true, links, attributes }, async (span) => {
      try {
        const outcome = await run(job.propagateTrace ? traceparentOf(span.spanContext()) : null);
        span.setAttribute('svc.outcome', outcome.status);
        if (outcome.kind === 'attempted' && outcome.responseStatus !== null) span.setAttribute('http.response.status_code', outcome.responseStatus);
        if (outcome.kind === 'attempted' && outcome.responseTimeMs !== null) span.setAttribute('svc.response_time_ms', outcome.responseTimeMs);
        if (outcome.kind === 'attempted' && outcome.status !== 'success') failSpan(span, Object.assign(new Error(outcome.error ?? 'attempt failed'), { name: 'AttemptFailed' }));
        return outcome;
      } catch (error) {
        failSpan(span, error);
        throw error;
      } finally {
        span.end();
      }
    });
  }

  untraced<T>(run: () => Promise<T>): Promise<T> {
    return context.with(suppressTracing(context.active()), run);
  }

  flush(): Promise<void> {
    return this.provider.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}
