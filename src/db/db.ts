/** What every store needs from the database (postgres.ts implements it). */
export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
}

/** A transaction kept open across other work, on a connection of its own, until commit or rollback. */
export interface OpenTransaction extends Queryable {
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

/** The database went down (`cause`), or came back after `downMs` during which `refused` statements were refused. */
export type Availability = { down: true; cause: unknown } | { down: false; downMs: number; refused: number };

/** Connections of a pool at one moment, for the metrics (read at scrape time, never per query). */
export interface PoolStats {
  total: number;
  idle: number;
  /** Queries waiting for a connection. */
  waiting: number;
  max: number;
}

/**
 * A request's transaction, opened by Db.openScope: every statement made through that Db inside
 * run() joins it, until commit() or rollback() (see scope.ts).
 */
export interface ScopedTransaction extends Queryable {
  run<T>(fn: () => T): T;
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

export interface Db extends Queryable {
  /**
   * Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. With
   * `unbounded`, its statements have no time-out (migrations). Inside an open scope (openScope) it
   * is a savepoint of the scope's transaction instead.
   */
  tx<T>(fn: (q: Queryable) => Promise<T>, options?: { unbounded?: boolean }): Promise<T>;
  /**
   * Runs `fn` on one connection of its own, outside any transaction and without time-out: for a
   * statement PostgreSQL refuses in a transaction (CREATE INDEX CONCURRENTLY, in a migration).
   */
  session<T>(fn: (q: Queryable) => Promise<T>): Promise<T>;
  /**
   * Opens a transaction that every query and tx of this Db made inside its run() joins, so a
   * request's whole change commits or rolls back as one (idempotency keys: src/http/idempotency/).
   */
  openScope(): Promise<ScopedTransaction>;
  /**
   * Work for once a write has committed (waking or feeding delivery workers): now, when no scope
   * is open here; else when the scope commits, and `onRollback` instead if it does not.
   */
  afterCommit(onCommit: () => void, onRollback?: () => void): void;
  /** Whether a statement made here now joins an open scope. */
  inScope(): boolean;
  /**
   * Opens a transaction that stays open while the caller does other work (delivery workers hold row
   * locks this way, engine/hold.ts). `settings` apply to this transaction only (SET LOCAL),
   * sent with its BEGIN.
   */
  begin(settings?: Record<string, string>): Promise<OpenTransaction>;
  /** Calls `onNotify` for every NOTIFY on `channel`; resolves to an unsubscribe function. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  /** The write connections now (the pool a burst can run out of). */
  poolStats(): PoolStats;
  /** Calls `fn` when the database is found down and when it answers again, once each (breaker.ts); returns a function that stops the calls. */
  onAvailability(fn: (change: Availability) => void): () => void;
  /** Statements refused at once since the start, because the database was known to be down. */
  refusedStatements(): number;
  close(): Promise<void>;
}

/**
 * The database did not answer: unreachable, silent past the query time-out, out of connections,
 * shutting down, or a statement cancelled by its time-out. The API answers 503 UNAVAILABLE with
 * Retry-After; workers back off and try again.
 */
export class DatabaseUnavailableError extends Error {
  readonly code = 'DB_UNAVAILABLE';

  /** `original`: the driver's error, whose code says what happened (ECONNREFUSED, 57P01, ...). */
  constructor(
    readonly reason: string,
    readonly original: unknown,
  ) {
    super(`database unavailable: ${reason}`);
  }
}
