import { sign } from '../webhooks/sign.js';
import { newSigningSecret } from '../webhooks/secrets.js';
import { CliError, UsageError } from './args.js';
import { followStream, StreamRefused, type StreamedEvent } from './event-source.js';

export const LISTEN_HELP = `svc listen --forward-to URL [--events TYPE] [--api-key KEY] [--base-url URL] [--workspace WSP] [--secret whsec_...] [--json]
  Follows the workspace's live event stream (GET /v1/events/stream) and POSTs every event to URL,
  signed per Standard Webhooks as a webhook delivery is (webhook-id, webhook-timestamp,
  webhook-signature), with a signing secret printed at start: give it to your receiver. Prints one
  line per event: time, type, id, your server's status and how long it took. If the connection to
  the service drops, it reconnects and resumes after the last event it received: nothing is missed
  or sent twice. Events are forwarded one at a time, in order, once each (a failed one is reported,
  not retried). Ctrl-C stops it.

  --forward-to URL  where to POST each event (e.g. http://localhost:4242/webhooks)
  --events TYPE     only this type, or a prefix pattern such as product.* (default: every event)
  --api-key KEY     an API key or personal access token (default: SVC_API_KEY)
  --base-url URL    the service (default: SVC_BASE_URL, else http://127.0.0.1:3000)
  --workspace WSP   the workspace, with a personal access token (Service-Workspace-Id)
  --secret whsec_   sign with this secret instead of a new one (so a receiver keeps its setting)
  --json            one JSON object per line instead of text

Example:
  SVC_API_KEY=svc_sk_... svc listen --forward-to http://localhost:4242/webhooks --events 'product.*'`;

/** How long the local server has to answer a forwarded event. */
const FORWARD_TIMEOUT_MS = 10_000;

export interface ListenOptions {
  forwardTo: string;
  events: string | null;
  apiKey: string;
  baseUrl: string;
  workspace: string | null;
  secret: string;
  json: boolean;
}

/** The options of `svc listen` from its flags and the environment; a wrong one is a UsageError. */
export function listenOptions(flags: Record<string, string | boolean | undefined>, env: NodeJS.ProcessEnv): ListenOptions {
  const text = (name: string) => (typeof flags[name] === 'string' && flags[name] !== '' ? (flags[name] as string) : null);
  const forwardTo = text('forward-to');
  if (!forwardTo) throw new UsageError('--forward-to is required: the URL to POST each event to (svc listen --help)');
  const apiKey = text('api-key') ?? env.SVC_API_KEY;
  if (!apiKey) throw new UsageError('no credential: pass --api-key or set SVC_API_KEY');
  const baseUrl = (text('base-url') ?? env.SVC_BASE_URL ?? 'http://127.0.0.1:3000').replace(/\/+$/, '');
  for (const [name, value] of [['forward-to', forwardTo], ['base-url', baseUrl]]) {
    if (!/^https?:$/.test(safeUrl(value)?.protocol ?? '')) throw new UsageError(`--${name} must be an http:// or https:// URL, got "${value}"`);
  }
  const secret = text('secret') ?? newSigningSecret();
  if (!/^whsec_[A-Za-z0-9+/_-]{16,}={0,2}$/.test(secret)) throw new UsageError('--secret must be a signing secret: whsec_ and base64');
  return { forwardTo, events: text('events'), apiKey, baseUrl, workspace: text('workspace'), secret, json: flags.json === true };
}

function safeUrl(text: string): URL | null {
  try {
    return new URL(text);
  } catch {
    return null;
  }
}

/** What became of one forwarded event. */
interface Forwarded {
  status: number | null;
  error: string | null;
  durationMs: number;
}

async function forward(options: ListenOptions, event: StreamedEvent, stop: AbortSignal): Promise<Forwarded> {
  const timestamp = Math.floor(Date.now() / 1000);
  const started = performance.now();
  try {
    const response = await fetch(options.forwardTo, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'svc-listen/1.0',
        'webhook-id': event.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': sign([options.secret], event.id, timestamp, event.data),
      },
      body: event.data,
      redirect: 'manual',
      signal: AbortSignal.any([stop, AbortSignal.timeout(FORWARD_TIMEOUT_MS)]),
    });
    await response.arrayBuffer().catch(() => {});
    return { status: response.status, error: null, durationMs: Math.round(performance.now() - started) };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    const name = (error as Error).name === 'TimeoutError' ? `no answer within ${FORWARD_TIMEOUT_MS / 1000} s` : (cause?.code ?? (error as Error).message);
    return { status: null, error: name, durationMs: Math.round(performance.now() - started) };
  }
}

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

/** `svc listen`: runs until SIGINT or SIGTERM (exit 0), or until the service refuses the stream (exit 1). */
export async function listen(options: ListenOptions): Promise<void> {
  const out = (line: string, fields: Record<string, unknown>) => process.stdout.write(options.json ? JSON.stringify(fields) + '\n' : line + '\n');
  const note = (line: string, fields: Record<string, unknown>) => (options.json ? out(line, fields) : process.stderr.write(line + '\n'));
  const stop = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop.abort());

  const query = options.events ? `?type=${encodeURIComponent(options.events)}` : '';
  out(`Ready! Forwarding ${options.events ?? 'every event'} to ${options.forwardTo}. Your webhook signing secret is ${options.secret} (Ctrl-C to quit)`, {
    ready: true,
    forwardTo: options.forwardTo,
    events: options.events,
    secret: options.secret,
  });
  let connectedOnce = false;
  try {
    await followStream({
      url: `${options.baseUrl}/v1/events/stream${query}`,
      headers: { authorization: `Bearer ${options.apiKey}`, ...(options.workspace ? { 'service-workspace-id': options.workspace } : {}) },
      signal: stop.signal,
      onConnected: (after) => {
        if (connectedOnce) note(`Reconnected to ${options.baseUrl}${after ? `, resuming after ${after}` : ''}`, { reconnected: true, after });
        connectedOnce = true;
      },
      onLost: (reason, retryMs) => note(`Lost the stream (${reason}); reconnecting in ${(retryMs / 1000).toFixed(1)} s`, { lost: reason, retryMs }),
      onEvent: async (event) => {
        const type = typeOf(event.data);
        const result = await forward(options, event, stop.signal);
        // Stopped while the local server was answering: no line for an answer cut short.
        if (stop.signal.aborted) return;
        const outcome = result.status !== null ? `[${result.status}]` : `[ERR] ${result.error}`;
        out(`${clockTime(new Date())}  ${type}  ${event.id}  --> ${outcome} POST ${options.forwardTo} (${result.durationMs} ms)`, {
          time: new Date().toISOString(),
          type,
          id: event.id,
          status: result.status,
          error: result.error,
          durationMs: result.durationMs,
        });
      },
    });
  } catch (error) {
    if (error instanceof StreamRefused) throw new CliError(`the service refused the stream: ${error.message}`);
    throw error;
  }
}
