import postgres from 'postgres';
import { statementSpan } from '../ops/trace.js';
import { Breaker } from './breaker.js';
import { DatabaseUnavailableError } from './db.js';
import { connectFailed, connectionLost, databaseDown, driverError } from './errors.js';
import { driverTypes } from './types.js';

export interface PoolOptions {
  /** The server's URL, without `options` (they are `settings`). */
  url: string;
  /** Settings sent when a connection starts (PostgreSQL's `options` startup parameter). */
  settings: string;
  max: number;
  /**
   * Statements a connection carries at once: many for reads, which then share its round trips
   * (pipelining); one for writes (postgres.js counts from the second: 1), so that a write waiting
   * for a row lock holds up at most one other, and only when every connection is busy.
   */
  pipeline: number;
  connectMs: number;
  queryMs: number;
  keepAliveMs: number;
  /** Whether the database is known to be down, shared with the process's other pools. */
  breaker?: Breaker;
}

/** A connection of a pool kept for one caller until released (a transaction). */
export interface Reserved {
  query<T>(text: string, values: (string | null)[], deadlineMs?: number): Promise<T[]>;
  release(): void;
}

type Pending = postgres.PendingQuery<postgres.Row[]> & { state?: unknown };

interface Held {
  lost: unknown;
}

const TYPES = driverTypes();

/**
 * Whether `reason` is the failure of the array-type look-up postgres.js makes on each new
 * connection. postgres.js 3.4.9 drops that look-up's promise (porsager/postgres#1192): when the
 * connection fails during it, the rejection is unhandled and, by Node's default, ends the process.
 * The statement that opened the connection fails on its own terms, so this rejection says nothing new.
 */
export function isTypeLookupFailure(reason: unknown): boolean {
  const query = (reason as { query?: unknown } | null)?.query;
  return typeof query === 'string' && query.includes('pg_catalog.pg_type') && query.includes('typarray');
}

/** Ignores postgres.js's dropped type look-up failures; every other unhandled rejection is thrown, as Node would. */
export function onUnhandledRejection(reason: unknown): void {
  if (!isTypeLookupFailure(reason)) throw reason;
}

let guarded = false;

/**
 * Connections to PostgreSQL through postgres.js, with a read time-out of ours: a statement that has
 * had no answer within `queryMs` finds the server silent (a network cut, a host that froze), so
 * every connection of the pool is dropped and new ones open on demand. A statement still waiting
 * for a connection at its time-out is withdrawn instead, and nothing is dropped. While the breaker
 * knows the database to be down, statements fail at once (breaker.ts), and so do those that were
 * waiting for a connection when it learnt it: postgres.js would open a connection for each of them.
 */
export class Pool {
  private sql: postgres.Sql;
  /** Statements in progress and connections reserved, for stats(). */
  private inUse = 0;
  /** Reserved connections by postgres.js's connection id, to tell one it was lost. */
  private readonly held = new Map<number, Held>();
  readonly breaker: Breaker;
  /** Statements and reservations waiting for a connection: each fails at once when the database is found down. */
  private readonly waiting = new Set<() => void>();
  /** postgres.js instances that have answered a statement: a failure on one that never has is a failure to connect. */
  private readonly answered = new WeakSet<postgres.Sql>();

  constructor(private readonly options: PoolOptions) {
    if (!guarded) process.on('unhandledRejection', onUnhandledRejection);
    guarded = true;
    this.breaker = options.breaker ?? new Breaker();
    this.breaker.onDown(() => {
      for (const withdraw of [...this.waiting]) withdraw();
    });
    this.sql = this.open();
  }

  query<T>(text: string, values: (string | null)[], deadlineMs = this.options.queryMs): Promise<T[]> {
    let probe: boolean;
    try {
      probe = this.breaker.admit();
    } catch (error) {
      return Promise.reject(error);
    }
    const sql = this.sql;
    return this.answer<T>(sql, sql.unsafe(text, values, { prepare: values.length > 0 }) as Pending, deadlineMs, text, probe);
  }

  /**
   * Tells the breaker what a statement's end on `sql` said about the database. A connection that
   * could not be opened (`connecting`: the statement was never sent, the error is one of opening a
   * connection, connectFailed(), or the pool has never had an answer) makes the database down; an
   * open connection lost says nothing yet about the next one (one server process ended, a proxy
   * restarted). Either way the pool is replaced: postgres.js 3.4.9 keeps a statement lost with its
   * connection as the one in progress, so when the next connection is refused with an error
   * (53300), it waits for an answer to that statement that never comes, and reconnects at once, in
   * a loop.
   */
  private learn(sql: postgres.Sql, error: unknown, probe: boolean, connecting = false, reserved = false): void {
    if (error === null) this.answered.add(sql);
    if (error !== null && databaseDown(error)) {
      this.replace(sql);
      if (connecting || connectFailed(error) || (!reserved && !this.answered.has(sql))) this.breaker.failed(error);
      else if (probe) this.breaker.withdrawn();
    } else if (error === null || probe || this.breaker.down) this.breaker.ok();
  }

  /**
   * A connection of its own, within `connectMs`, on which `begin` (BEGIN and its settings) has run.
   * Should the connection be lost meanwhile, what the caller sends on it fails at once.
   */
  async reserve(begin: string, deadlineMs = this.options.queryMs): Promise<Reserved> {
    const probe = this.breaker.admit();
    const sql = this.sql;
    const reserving = sql.reserve();
    let timer: NodeJS.Timeout | undefined;
    let ours: DatabaseUnavailableError | null = null;
    let withdraw = () => {};
    const late = new Promise<never>((_, reject) => {
      const giveUp = (error: DatabaseUnavailableError) => reject((ours = error));
      timer = setTimeout(() => giveUp(new DatabaseUnavailableError(`no database connection within ${this.options.connectMs} ms`, null)), this.options.connectMs);
      withdraw = () => giveUp(this.breaker.refusal());
    });
    this.waiting.add(withdraw);
    let connection: postgres.ReservedSql;
    try {
      connection = await Promise.race([reserving, late]);
    } catch (error) {
      // Taken after all, too late: back to the pool. A connection that failed tells the breaker.
      reserving.then(
        (c) => c.release(),
        (e) => {
          if (ours) this.learn(sql, driverError(e), false, true);
        },
      );
      if (ours) {
        if (probe) this.breaker.withdrawn();
        throw ours;
      }
      const failure = driverError(error);
      this.learn(sql, failure, probe, true);
      throw failure;
    } finally {
      clearTimeout(timer);
      this.waiting.delete(withdraw);
    }
    this.inUse++;
    let released = false;
    let id: number | null = null;
    // postgres.js would write to the socket of a connection it has lost (and fail the process),
    // so a lost connection is known here (lose(), from its onclose) and nothing more is sent on it.
    const held: Held = { lost: null };
    const send = async <T>(text: string, values: (string | null)[], deadline: number, options: postgres.UnsafeQueryOptions = {}) => {
      if (held.lost) throw held.lost;
      try {
        return await this.answer<T>(sql, connection.unsafe(text, values, { ...options, prepare: values.length > 0 }) as Pending, deadline, text, false, true);
      } catch (error) {
        if (connectionLost(error)) held.lost ??= error;
        throw error;
      }
    };
    const release = () => {
      if (released) return;
      released = true;
      this.inUse--;
      if (id !== null) this.held.delete(id);
      // A lost connection is postgres.js's again already, to open anew on demand.
      if (!held.lost) connection.release();
    };
    try {
      // onexecute gives the connection this runs on: postgres.js calls onclose with its id.
      const onexecute = (c: { id: number }) => {
        id = c.id;
        this.held.set(c.id, held);
        return true;
      };
      await send(begin, [], deadlineMs, { onexecute } as postgres.UnsafeQueryOptions);
    } catch (error) {
      release();
      if (probe) this.breaker.withdrawn();
      throw error;
    }
    return { query: (text, values, deadline = this.options.queryMs) => send(text, values, deadline), release };
  }

  stats(): { busy: number; waiting: number; max: number } {
    return { busy: Math.min(this.inUse, this.options.max), waiting: Math.max(0, this.inUse - this.options.max), max: this.options.max };
  }

  /** Lets statements under way finish for up to 5 s, or none while the database is known down (a stop in an outage). */
  async close(): Promise<void> {
    await this.sql.end({ timeout: this.breaker.down ? 0 : 5 });
  }

  /** `text` is the statement's, without its values: what its span shows when tracing is on (ops/trace.ts). */
  private async answer<T>(sql: postgres.Sql, pending: Pending, deadlineMs: number, text: string, probe = false, reserved = false): Promise<T[]> {
    this.inUse++;
    const span = statementSpan(text);
    let timer: NodeJS.Timeout | undefined;
    // Our own verdict, when the statement was given up before the driver answered: cancelling a
    // statement not sent rejects it too (57014), and that rejection must not be taken for the server's.
    let ours: DatabaseUnavailableError | null = null;
    let withdraw = () => {};
    const late = new Promise<never>((_, reject) => {
      const giveUp = (error: DatabaseUnavailableError) => {
        ours = error;
        reject(error);
      };
      timer = setTimeout(() => {
        if (pending.state === undefined) {
          // Never sent: no connection was free.
          giveUp(new DatabaseUnavailableError(`no database connection within ${deadlineMs} ms`, null));
          pending.cancel();
        } else {
          this.replace(sql);
          giveUp(new DatabaseUnavailableError(`no answer from the database within ${deadlineMs} ms`, null));
          this.breaker.failed(ours);
        }
      }, deadlineMs);
      // The database was found down meanwhile: a statement not sent yet is withdrawn at once.
      withdraw = () => {
        if (pending.state !== undefined) return;
        giveUp(this.breaker.refusal());
        pending.cancel();
      };
    });
    this.waiting.add(withdraw);
    try {
      const rows = (await Promise.race([pending, late])) as unknown as T[];
      span?.end();
      this.learn(sql, null, probe);
      return rows;
    } catch (error) {
      pending.catch(() => {});
      if (ours) {
        span?.end(ours);
        if (probe) this.breaker.withdrawn();
        throw ours;
      }
      const failure = driverError(error);
      span?.end(failure);
      // A statement never sent on a pooled connection was waiting for one to open; on a reserved
      // connection (open already) it only met the connection's loss.
      this.learn(sql, failure, probe, !reserved && pending.state === undefined, reserved);
      throw failure;
    } finally {
      clearTimeout(timer);
      this.waiting.delete(withdraw);
      this.inUse--;
    }
  }

  /**
   * New connections replace all of `stale`'s, which are cut at once: the server went silent on
   * them, or one of them failed (see learn()).
   */
  private replace(stale: postgres.Sql): void {
    if (this.sql !== stale) return;
    this.sql = this.open();
    stale.end({ timeout: 0 }).catch(() => {});
  }

  private open(): postgres.Sql {
    const { options } = this;
    // max_pipeline and onclose are options of postgres.js that its types do not declare.
    return postgres(options.url, {
      max: options.max,
      max_pipeline: options.pipeline,
      connect_timeout: Math.max(1, Math.ceil(options.connectMs / 1000)),
      keep_alive: options.keepAliveMs > 0 ? Math.max(1, Math.round(options.keepAliveMs / 1000)) : null,
      connection: { options: options.settings },
      // Notices are for people at a console; the service has its own log.
      onnotice: () => {},
      onclose: (id: number) => {
        const held = this.held.get(id);
        if (held) held.lost ??= new DatabaseUnavailableError('the database connection was lost', { code: 'CONNECTION_CLOSED' });
      },
      // Needed: with fetch_types off, postgres.js 3.4 never hands a new connection to reserve().
      // The array types it fetches are parsed by TYPES' parsers where TYPES has one.
      fetch_types: true,
      types: TYPES,
      transform: { undefined: null },
    } as postgres.Options<Record<string, postgres.PostgresType>>);
  }
}
