/**
 * Traces (OpenTelemetry), off unless the standard OTEL_* variables ask for them (tracingWanted).
 * This module is all the rest of the code imports: until startTracing() has loaded the SDK
 * (tracing/sdk.ts, imported on demand), `active` is null and each function below is a null check.
 * Spans never carry a credential, a header value or a body (docs/operations.md, "Traces").
 */

export type { AttemptResult, AttemptSubject, Ending, Tracing } from './trace-types.js';
import type { Ending, Tracing } from './trace-types.js';

let active: Tracing | null = null;

/** The tracing of this process, or null when it is off. */
export function tracing(): Tracing | null {
  return active;
}

const truthy = (value: string | undefined) => value !== undefined && value.trim().toLowerCase() === 'true';
const given = (value: string | undefined) => value !== undefined && value.trim() !== '';

/**
 * Whether the environment asks for traces: an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or an exporter (OTEL_TRACES_EXPORTER, other than `none`),
 * and OTEL_SDK_DISABLED not `true`.
 */
export function tracingWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  if (truthy(env.OTEL_SDK_DISABLED)) return false;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter === 'none') return false;
  return given(env.OTEL_EXPORTER_OTLP_ENDPOINT) || given(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) || given(exporter);
}

/**
 * Starts the SDK when the environment asks for traces (once per process); returns whether tracing
 * is on. A setting the SDK cannot use stops the start with a ConfigError that names it.
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  if (active) return true;
  if (!tracingWanted(env)) return false;
  const { startSdk } = await import('./tracing/sdk.js');
  active = await startSdk(env);
  return true;
}

/** Exports what is left and turns tracing off. */
export async function stopTracing(): Promise<void> {
  const stopping = active;
  active = null;
  await stopping?.shutdown();
}

/** The traceparent to keep with events written now (null when off or outside a span). */
export function currentTrace(): string | null {
  return active === null ? null : active.current();
}

/** A span for one database statement, or null (off, or no span in progress). */
export function statementSpan(sql: string): Ending | null {
  return active === null ? null : active.statement(sql);
}
