import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** What the receiver does with one request. */
export type Behaviour =
  | { status: number; body?: string; headers?: Record<string, string>; delayMs?: number }
  | { redirect: string; status?: 301 | 302 | 307 | 308 }
  /** Never answers (until the receiver is closed or released). */
  | { hang: true }
  /** Closes the connection without an answer (RST with `reset`, else a plain close). */
  | { destroy: true; reset?: boolean };

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** The raw body bytes as received. */
  raw: Buffer;
  body: string;
  /** Headers as a plain string map, the shape webhook verifiers take. */
  flatHeaders: Record<string, string>;
}

export interface Receiver {
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** Requests whose connection closed before they were answered (their sender gave up or died). */
  abandoned: ReceivedRequest[];
  /** TCP connections accepted so far (a refused target never opens one). */
  readonly connections: number;
  /** Sets what later requests get; `index` counts every request this receiver has seen. */
  respond(script: (request: ReceivedRequest, index: number) => Behaviour): void;
  /** Answers every request left hanging with this behaviour. */
  release(behaviour?: Behaviour): void;
  /** Resolves once `count` requests have arrived; rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1 that records what it receives and answers as scripted (200 by default). */
export async function startReceiver(script: (request: ReceivedRequest, index: number) => Behaviour = () => ({ status: 200 })): Promise<Receiver> {
  let current = script;
  const requests: ReceivedRequest[] = [];
  const abandoned: ReceivedRequest[] = [];
  const hanging: ServerResponse[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  const waiters: { count: number; resolve: () => void }[] = [];

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const flatHeaders: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) flatHeaders[k] = Array.isArray(v) ? v.join(', ') : v;
      const received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, raw, body: raw.toString('utf8'), flatHeaders };
      const index = requests.length;
      requests.push(received);
      res.on('close', () => {
        if (!res.writableEnded) abandoned.push(received);
      });
      for (const w of waiters.filter((w) => requests.length >= w.count)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      act(current(received, index), req, res);
    });
  });
  server.on('connection', (socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  function act(behaviour: Behaviour, req: IncomingMessage, res: ServerResponse): void {
    if ('hang' in behaviour) {
      hanging.push(res);
      return;
    }
    if ('destroy' in behaviour) {
      if (behaviour.reset) req.socket.resetAndDestroy();
      else req.socket.destroy();
      return;
    }
    if ('redirect' in behaviour) {
      res.writeHead(behaviour.status ?? 301, { location: behaviour.redirect }).end();
      return;
    }
    const send = () => res.writeHead(behaviour.status, behaviour.headers ?? { 'content-type': 'text/plain' }).end(behaviour.body ?? 'ok');
    if (behaviour.delayMs) setTimeout(send, behaviour.delayMs);
    else send();
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    abandoned,
    get connections() {
      return connections;
    },
    respond(next) {
      current = next;
    },
    release(behaviour = { status: 200 }) {
      for (const res of hanging.splice(0)) {
        if (!res.socket?.destroyed) act(behaviour, res.req, res);
      }
    },
    waitFor(count, timeoutMs = 20_000) {
      if (requests.length >= count) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`receiver saw ${requests.length} of ${count} requests`)), timeoutMs);
        waiters.push({ count, resolve: () => (clearTimeout(timer), resolve()) });
      });
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
