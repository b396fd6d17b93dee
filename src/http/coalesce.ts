import type { FastifyReply, FastifyRequest } from 'fastify';

interface Pending {
  promise: Promise<unknown>;
  start: () => void;
}

interface Run {
  running: boolean;
  /** The computation that waits for the running one: every request arriving meanwhile joins it. */
  next: Pending | null;
}

/**
 * Identical reads in flight at once share one computation, without ever answering from the past.
 * A request never joins a computation that has already started: while one is in flight for a key,
 * requests for that key wait for the next one, which starts when the current one ends and answers
 * all of them. So every answer comes from a query that began after its request arrived, and sees
 * every write committed before it (read-your-writes across processes holds unchanged). Under load,
 * N identical requests cost about two queries instead of N; alone, a request runs at once.
 */
export class ReadCoalescer {
  private readonly runs = new Map<string, Run>();

  run<T>(key: string, compute: () => Promise<T>): Promise<T> {
    let run = this.runs.get(key);
    if (!run) {
      run = { running: false, next: null };
      this.runs.set(key, run);
    }
    if (!run.running && !run.next) return this.execute(key, run, compute);
    if (!run.next) {
      const waiting = run;
      let start!: () => void;
      const promise = new Promise<T>((resolve, reject) => {
        start = () => this.execute(key, waiting, compute).then(resolve, reject);
      });
      run.next = { promise, start };
      if (!run.running) setImmediate(() => this.startNext(key, waiting));
    }
    return run.next.promise as Promise<T>;
  }

  /** Keys with a computation in flight or waiting (for tests). */
  get size(): number {
    return this.runs.size;
  }

  private startNext(key: string, run: Run): void {
    const next = run.next;
    if (!next) {
      if (!run.running) this.runs.delete(key);
      return;
    }
    run.next = null;
    next.start();
  }

  private execute<T>(key: string, run: Run, compute: () => Promise<T>): Promise<T> {
    run.running = true;
    const done = () => {
      run.running = false;
      this.startNext(key, run);
    };
    let result: Promise<T>;
    try {
      result = compute();
    } catch (error) {
      result = Promise.reject(error);
    }
    result.then(done, done);
    return result;
  }
}

/**
 * Sends a read's JSON text, computed once for every identical request in flight (see
 * ReadCoalescer). The key is the workspace and the request's URL, which together determine the
 * answer; the caller has checked the credential's permission and the query before.
 */
export async function sendCoalesced(
  ctx: { reads: ReadCoalescer },
  request: FastifyRequest,
  reply: FastifyReply,
  workspaceId: string,
  json: () => Promise<string>,
): Promise<FastifyReply> {
  const body = await ctx.reads.run(`${workspaceId} ${request.url}`, json);
  return reply.type('application/json; charset=utf-8').send(body);
}
