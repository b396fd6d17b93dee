import { CliError } from './args.js';
import { authHeaders } from './connection.js';
import { followStream, probeStream, StreamRefused, type Retry, type StreamedEvent } from './event-source.js';
import { forward, type Forwarded } from './forward.js';
import { onParentGone } from './signals.js';
import { matches, type ListenOptions } from './listen-options.js';

export { LISTEN_FLAGS, LISTEN_HELP, listenOptions } from './listen-options.js';

const typeOf = (data: string): string => {
  try {
    return String((JSON.parse(data) as { type?: unknown }).type ?? '?');
  } catch {
    return '?';
  }
};

/** `2026-11-25 14:03:07` in local time, as a terminal user reads it. */
function clockTime(date: Date): string {
  const two = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())} ${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** A retry as a person reads it: an unreachable service is named as such. */
function retryLine(retry: Retry, baseUrl: string): string {
  if (retry.kind === 'unreachable') return `Cannot reach ${baseUrl} (${retry.reason}), retrying in ${seconds(retry.retryMs)}`;
  if (retry.kind === 'answered') return `The service answered ${retry.reason}; retrying in ${seconds(retry.retryMs)}`;
  return `Lost the stream (${retry.reason}); reconnecting in ${seconds(retry.retryMs)}`;
}

function readyLine(options: ListenOptions): string {
  const where = options.routes.map((r) => `${r.events === '*' ? (options.filter ?? 'every event') : r.events} to ${r.url}`).join(', ');
  const doing = [where && `Forwarding ${where}`, options.printJson && `Printing ${options.filter ?? 'every event'} as JSON`].filter(Boolean).join('; ');
  return `Ready! ${doing}. Your webhook signing secret is ${options.secret} (Ctrl-C to quit)`;
}

/**
 * `svc listen`: runs until SIGINT, SIGTERM or SIGHUP, or until the process that started it is gone
 * (exit 0), or until the service refuses the stream or one of the --forward types (exit 1). "Ready!" comes once the service has accepted the stream.
 */
export async function listen(options: ListenOptions): Promise<void> {
  // With --print-json, standard output carries the events alone, so that it can be piped.
  const status = options.printJson ? process.stderr : process.stdout;
  const out = (line: string, fields: Record<string, unknown>) => status.write(options.json ? JSON.stringify(fields) + '\n' : line + '\n');
  const note = (line: string, fields: Record<string, unknown>) => (options.json ? out(line, fields) : process.stderr.write(line + '\n'));
  const stop = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, () => stop.abort());
  onParentGone(() => stop.abort());

  const headers = authHeaders(options);
  const streamUrl = (type: string | null) => `${options.baseUrl}/v1/events/stream${type ? `?type=${encodeURIComponent(type)}` : ''}`;
  // Types the stream's own filter does not check: the service judges each once, before Ready.
  const unchecked = [...new Set(options.routes.map((r) => r.events))].filter((events) => events !== '*' && events !== options.filter);
  let connectedOnce = false;

  const onEvent = async (event: StreamedEvent) => {
    const type = typeOf(event.data);
    if (options.printJson) process.stdout.write(event.data + '\n');
    const targets = options.routes.filter((r) => matches(r.events, type)).map((r) => r.url);
    const results: Forwarded[] = await Promise.all(targets.map((url) => forward(url, options.secret, event, stop.signal)));
    // Stopped while a local server was answering: no line for an answer cut short.
    if (stop.signal.aborted) return;
    for (const result of results) {
      const outcome = result.status !== null ? `[${result.status}]` : `[ERR] ${result.error}`;
      out(`${clockTime(new Date())}  ${type}  ${event.id}  --> ${outcome} POST ${result.url} (${result.durationMs} ms)`, {
        time: new Date().toISOString(),
        type,
        id: event.id,
        url: result.url,
        status: result.status,
        error: result.error,
        durationMs: result.durationMs,
      });
    }
  };

  try {
    await followStream({
      url: streamUrl(options.filter),
      headers,
      signal: stop.signal,
      onConnected: async (after) => {
        if (connectedOnce) return void note(`Reconnected to ${options.baseUrl}${after ? `, resuming after ${after}` : ''}`, { reconnected: true, after });
        for (const events of unchecked) await probeStream(streamUrl(events), events, headers, stop.signal);
        connectedOnce = true;
        const fields = { ready: true, events: options.filter, forwards: options.routes, secret: options.secret };
        out(readyLine(options), options.routes.length === 1 ? { ...fields, forwardTo: options.routes[0].url } : fields);
      },
      onRetry: (retry) => note(retryLine(retry, options.baseUrl), { [retry.kind]: retry.reason, retryMs: retry.retryMs }),
      onEvent,
    });
  } catch (error) {
    if (error instanceof StreamRefused) throw new CliError(`the service refused the stream${error.filter ? ` of ${error.filter} events` : ''}: ${error.message}`);
    throw error;
  }
}
