/** One event of the stream: its id and its body, as the service sent them. */
export interface StreamedEvent {
  id: string;
  data: string;
}

/** An answer that retrying cannot change (a wrong credential, a bad filter): the follower stops. */
export class StreamRefused extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The filter refused, when the refusal came from a probe of one (probeStream). */
    readonly filter: string | null = null,
  ) {
    super(message);
  }
}

/** Why the follower waits before its next try. */
export interface Retry {
  /** unreachable: no answer at all; answered: an error answer (429, 5xx); lost: an open stream ended. */
  kind: 'unreachable' | 'answered' | 'lost';
  reason: string;
  retryMs: number;
}

const REFUSALS = [400, 401, 403, 404];

export interface FollowOptions {
  /** The stream's URL, filters included. */
  url: string;
  headers: Record<string, string>;
  /** Resume after this event (Last-Event-ID); null: from now. */
  lastEventId?: string | null;
  /** Called for each event, in order; the next waits for it. */
  onEvent(event: StreamedEvent): Promise<void>;
  /** The stream is open (again); events are read once it returns. Throwing stops the follower. */
  onConnected?(resumedAfter: string | null): void | Promise<void>;
  /** A try failed or the stream ended; the next try comes after `retry.retryMs`. */
  onRetry?(retry: Retry): void;
  signal: AbortSignal;
}

const MIN_RETRY_MS = 500;
const MAX_RETRY_MS = 10_000;

/**
 * Follows a `text/event-stream` of the service for as long as `signal` allows: reads each message,
 * hands its events over in order and, when the connection drops or the server ends the stream,
 * reconnects with `Last-Event-ID` set to the last event received, so that nothing is missed and
 * nothing comes twice. Waits grow from 0.5 s to 10 s while tries fail, and follow Retry-After.
 * Answers 400, 401, 403 and 404 are final (StreamRefused), as is an error thrown by onConnected.
 */
export async function followStream(options: FollowOptions): Promise<void> {
  let lastEventId = options.lastEventId ?? null;
  let retryMs = MIN_RETRY_MS;
  while (!options.signal.aborted) {
    let kind: Retry['kind'] = 'unreachable';
    let reason: string;
    try {
      const response = await fetch(options.url, {
        headers: { ...options.headers, accept: 'text/event-stream', ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
        signal: options.signal,
      });
      kind = 'answered';
      if (!response.ok) {
        const message = await refusal(response);
        if (REFUSALS.includes(response.status)) throw new StreamRefused(response.status, message);
        const retryAfter = Number(response.headers.get('retry-after'));
        if (Number.isFinite(retryAfter) && retryAfter > 0) retryMs = Math.min(retryAfter * 1000, 60_000);
        reason = `${response.status}: ${message}`;
      } else {
        try {
          await options.onConnected?.(lastEventId);
        } catch (error) {
          await response.body?.cancel().catch(() => {});
          throw error;
        }
        kind = 'lost';
        retryMs = MIN_RETRY_MS;
        for await (const event of messages(response.body!, options.signal)) {
          await options.onEvent(event);
          lastEventId = event.id;
        }
        reason = 'the service ended the stream';
      }
    } catch (error) {
      if (error instanceof StreamRefused) throw error;
      if (options.signal.aborted) return;
      reason = describe(error);
    }
    options.onRetry?.({ kind, reason, retryMs });
    await sleep(retryMs, options.signal);
    retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
  }
}

/** The message of an error answer: `CODE: message` from the envelope, else the status. */
async function refusal(response: Response): Promise<string> {
  const text = await response.text().catch(() => '');
  return errorMessage(text) ?? `HTTP ${response.status}`;
}

/**
 * Asks the service whether it accepts a stream at `url` (with its filter), and closes it at once:
 * a refusal is a StreamRefused with the service's message; any other answer, or none, passes.
 */
export async function probeStream(url: string, filter: string, headers: Record<string, string>, signal: AbortSignal): Promise<void> {
  const done = new AbortController();
  try {
    const response = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' }, signal: AbortSignal.any([signal, done.signal]) });
    if (REFUSALS.includes(response.status)) throw new StreamRefused(response.status, await refusal(response), filter);
  } catch (error) {
    if (error instanceof StreamRefused) throw error;
  } finally {
    done.abort();
  }
}

/** The events of a Server-Sent Events body, as they arrive (comments and other fields skipped). */
async function* messages(body: ReadableStream<Uint8Array>, signal: AbortSignal): AsyncGenerator<StreamedEvent> {
  const decoder = new TextDecoder();
  let pending = '';
  const reader = body.getReader();
  const cancel = () => void reader.cancel().catch(() => {});
  signal.addEventListener('abort', cancel, { once: true });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      pending += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
      let cut: number;
      while ((cut = pending.indexOf('\n\n')) >= 0) {
        const block = pending.slice(0, cut);
        pending = pending.slice(cut + 2);
        let id: string | null = null;
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('id:')) id = line.slice(3).trimStart();
          else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        }
        if (id !== null && data.length > 0) yield { id, data: data.join('\n') };
      }
    }
  } finally {
    signal.removeEventListener('abort', cancel);
    cancel();
  }
}

function errorMessage(text: string): string | null {
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
    return body.error?.message ? `${body.error.code ?? 'ERROR'}: ${body.error.message}` : null;
  } catch {
    return null;
  }
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  return cause?.code ?? cause?.message ?? (error as Error)?.message ?? String(error);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
