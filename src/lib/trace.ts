/**
 * Traces (OpenTelemetry), off unless the standard OTEL_* variables ask for them (tracingWanted).
 * This module is all the rest of the code imports: until startTracing() (ops/tracing/start.ts) has
 * loaded the SDK on demand, `active` is null and each function below is a null check.
 * Spans never carry a credential, a header value or a body (docs/operations.md, "Traces").
 */

export type { AttemptResult, AttemptSubject, Ending, Tracing } from './trace-types.js';
import type { Ending, Tracing } from './trace-types.js';

let active: Tracing | null = null;

/** The tracing of this process, or null when it is off. */
export function tracing(): Tracing | null {
  return active;
}

/** Sets the tracing of this process (ops/tracing/start.ts, once the SDK is loaded), or turns it off. */
export function setTracing(value: Tracing | null): void {
  active = value;
}

/** Runs `run` with no span made inside it (the warm-up's work: it serves and delivers nothing). */
export function untraced<T>(run: () => Promise<T>): Promise<T> {
  return active === null ? run() : active.untraced(run);
}

/** The traceparent to keep with events written now (null when off or outside a span). */
export function currentTrace(): string | null {
  return active === null ? null : active.current();
}

/** A span for one database statement, or null (off, or no span in progress). */
export function statementSpan(sql: string): Ending | null {
  return active === null ? null : active.statement(sql);
}
