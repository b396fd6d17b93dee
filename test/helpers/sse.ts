import { request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';

/** One message of a Server-Sent Events stream: its `id:` and `data:` fields. */
export interface SseMessage {
  id: string | undefined;
  data: string;
}

export interface SseClient {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body as received, byte for byte (while it is a stream: everything so far). */
  readonly raw: string;
  messages: SseMessage[];
  comments: string[];
  /** Resolves once `count` messages have arrived; rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number): Promise<SseMessage[]>;
  /** Resolves once a comment has arrived after the `count`th one. */
  waitForComments(count: number, timeoutMs?: number): Promise<void>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  /** Stops reading from the socket (a slow client) / starts again. */
  pause(): void;
  resume(): void;
  /** Hangs up. */
  close(): void;
}

/**
 * Opens a GET to a live server and parses its `text/event-stream` answer as it arrives. A non-2xx
 * answer resolves too, with its body in `raw`, once it has ended.
 */
export function openSse(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { accept: 'text/event-stream', ...headers } }, (res: IncomingMessage) => {
      let raw = '';
      let pending = '';
      const messages: SseMessage[] = [];
      const comments: string[] = [];
      const waiters = new Set<() => void>();
      let resolveEnded!: () => void;
      const ended = new Promise<void>((r) => (resolveEnded = r));
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        raw += chunk;
        pending += chunk;
        let cut: number;
        while ((cut = pending.indexOf('\n\n')) >= 0) {
          const block = pending.slice(0, cut);
          pending = pending.slice(cut + 2);
          let id: string | undefined;
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim());
            else if (line.startsWith('id: ')) id = line.slice(4);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length > 0) messages.push({ id, data: data.join('\n') });
        }
        for (const waiter of [...waiters]) waiter();
      });
      const finish = () => {
        resolveEnded();
        for (const waiter of [...waiters]) waiter();
      };
      res.on('end', finish);
      res.on('close', finish);
      res.on('error', finish);
      let done = false;
      ended.then(() => (done = true));
      const until = (ready: () => boolean, what: string, timeoutMs: number) =>
        new Promise<void>((ok, fail) => {
          const check = () => {
            if (ready()) {
              waiters.delete(check);
              clearTimeout(timer);
              ok();
            } else if (done) {
              waiters.delete(check);
              clearTimeout(timer);
              fail(new Error(`stream ended before ${what}; got ${messages.length} messages: ${raw.slice(-500)}`));
            }
          };
          const timer = setTimeout(() => {
            waiters.delete(check);
            fail(new Error(`no ${what} within ${timeoutMs} ms; got ${messages.length} messages`));
          }, timeoutMs);
          waiters.add(check);
          check();
        });
      const client: SseClient = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        get raw() {
          return raw;
        },
        messages,
        comments,
        waitFor: async (count, timeoutMs = 10_000) => {
          await until(() => messages.length >= count, `${count} messages`, timeoutMs);
          return messages.slice(0, count);
        },
        waitForComments: (count, timeoutMs = 10_000) => until(() => comments.length > count, `comment ${count + 1}`, timeoutMs),
        ended,
        pause: () => res.pause(),
        resume: () => res.resume(),
        close: () => req.destroy(),
      };
      if ((res.statusCode ?? 0) >= 300) ended.then(() => resolve(client));
      else resolve(client);
    });
    req.on('error', reject);
    req.end();
  });
}

/** What injectStream answers: the status, the headers and the body read so far. */
export interface StreamHead {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  /** The whole body of an answer that ends (an error), else its first chunk. */
  body: string;
  json(): any;
}

/**
 * `app.inject` for a route that may answer with a stream that does not end: resolves with the
 * head and the first chunk of a stream (then hangs up), or the whole body of any other answer.
 */
export async function injectStream(app: { inject(options: object): Promise<any> }, options: Record<string, unknown>): Promise<StreamHead> {
  const controller = new AbortController();
  const res = await app.inject({ ...options, payloadAsStream: true, signal: controller.signal });
  const streaming = String(res.headers['content-type'] ?? '').startsWith('text/event-stream');
  let body = '';
  const stream = res.stream() as NodeJS.ReadableStream;
  for await (const chunk of stream) {
    body += chunk;
    if (streaming) break;
  }
  if (streaming) controller.abort();
  return { statusCode: res.statusCode, headers: res.headers, body, json: () => JSON.parse(body) };
}
