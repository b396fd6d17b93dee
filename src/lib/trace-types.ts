import type { FastifyInstance } from 'fastify';

/** The shapes shared by trace.ts (what the code calls) and tracing/sdk.ts (what answers once tracing is on). */

/** A span in progress that its caller ends. */
export interface Ending {
  end(error?: unknown): void;
}

/** What an attempt span tells of its delivery: the fields of the engine's Job (engine/delivery/job.ts) that a span reads. */
export interface AttemptSubject {
  id: string;
  workspaceId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  /** Attempts made before this one. */
  attempt: number;
  /** The traceparent of the request whose write made the event; null when none was kept. */
  trace: string | null;
  /** The endpoint is sent a traceparent header. */
  propagateTrace: boolean;
}

/** What an attempt came to, as its span records it. */
export type AttemptResult =
  | { kind: 'deferred' | 'disabled'; status: string }
  | { kind: 'attempted'; status: string; responseStatus: number | null; responseTimeMs: number | null; error: string | null };

/** The SDK's side, loaded only when tracing is on (tracing/sdk.ts). */
export interface Tracing {
  /** Hooks on `app` giving each request a span (tracing/requests.ts). */
  requests(app: FastifyInstance): void;
  /** The traceparent of the span in progress, to keep with the events written now; null outside one. */
  current(): string | null;
  /** A span for one statement, a child of the span in progress; null outside one. */
  statement(sql: string): Ending | null;
  /** Runs an outbox write in a span of its own; `deliveries` counts what it fanned out to. */
  write<T>(eventTypes: string[], run: () => Promise<T>, deliveries: (result: T) => number): Promise<T>;
  /** Runs an attempt in a span of its own, linked to the request behind its event; `run` gets the traceparent to send, if any. */
  attempt<T extends AttemptResult>(subject: AttemptSubject, run: (traceparent: string | null) => Promise<T>): Promise<T>;
  /** Runs `run` with no span made inside it: the warm-up's requests, writes and attempts (server/warm-up.ts). */
  untraced<T>(run: () => Promise<T>): Promise<T>;
  /** Exports the spans ended so far. */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}
