import { SpanStatusCode, type Span } from '@opentelemetry/api';

/** Marks `span` failed, with `error` as its exception event: name, message and stack, never the error's other fields. */
export function failSpan(span: Span, error: unknown): void {
  const e = error instanceof Error ? error : new Error(String(error));
  span.recordException({ name: e.name, message: e.message, stack: e.stack });
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
}
