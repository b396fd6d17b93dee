import { setTracing, tracing } from '../../lib/trace.js';

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
  if (tracing()) return true;
  if (!tracingWanted(env)) return false;
  const { startSdk } = await import('./sdk.js');
  setTracing(await startSdk(env));
  return true;
}

/** Exports what is left and turns tracing off. */
export async function stopTracing(): Promise<void> {
  const stopping = tracing();
  setTracing(null);
  await stopping?.shutdown();
}
