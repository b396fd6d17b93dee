import postgres from 'postgres';
import { statementSpan } from '../lib/trace.js';
import { Breaker } from './breaker.js';
import { DatabaseUnavailableError } from './db.js';
import { guardRejections, openDriver, type PoolOptions } from './driver.js';
import { connectFailed, connectionLost, databaseDown, driverError, serverFull } from './errors.js';
import { Gate } from './gate.js';

export type { PoolOptions };

/** A connection of a pool kept for one caller until released (a transaction). */
export interface Reserved {
  query<T>(text: string, values: (string | null)[], deadlineMs?: number): Promise<T[]>;
  release(): void;
}

type Pending = postgres.PendingQuery<postgres.Row[]> & { state?: unknown };

interface Held {
  lost: unknown;
}

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
  /** Withdrawals of what waits for a connection: each fails at once when the database is found down. */
  private readonly waiting = new Set<() => void>();
  /** postgres.js instances that have answered a statement: a failure on one that never has is a failure to connect. */
  private readonly answered = new WeakSet<postgres.Sql>();
  /** Statements and reservations handed to postgres.js (gate.ts), and failures to open a connection on a full server, tried again. */
  private readonly gate: Gate;
  private readonly refusedFull = new WeakSet<object>();

  constructor(private readonly options: PoolOptions) {
    guardRejections();
    this.breaker = options.breaker ?? new Breaker();
    this.breaker.onDown(() => {
      for (const withdraw of [...this.waiting]) withdraw();
    });
    this.gate = new Gate(options.max);
    this.sql = this.connect();
  }

  query<T>(text: string, values: (string | null)[], deadlineMs = this.options.queryMs): Promise<T[]> {
    let probe: boolean;
    try {
      probe = this.breaker.admit();
    } catch (error) {
      return Promise.reject(error);
    }
    const started = performance.now();
    const send = (): Promise<T[]> => {
      const sql = this.sql;
      const left = deadlineMs - (performance.now() - started);
      return this.answer<T>(sql, sql.unsafe(text, values, { prepare: values.length > 0 }) as Pending, left, text, probe).then(
        (rows) => (this.gate.leave(), rows),
        (error) => {
          this.gate.leave();
          // The server is full: the statement was never sent, and waits for a connection the pool has.
          if (this.refusedFull.has(error as object)) return this.queued(deadlineMs - (performance.now() - started), probe).then(send);
          throw error;
        },
      );
    };
    return this.gate.take() ? send() : this.queued(deadlineMs, probe).then(send);
  }

  /** A place at the gate (gate.ts) within `deadlineMs`; given up at once when the database is found down meanwhile. */
  private queued(deadlineMs: number, probe: boolean): Promise<void> {
    return this.gate.wait(deadlineMs, this.waiting, () => this.breaker.refusal()).catch((error: unknown) => {
      if (probe) this.breaker.withdrawn();
      throw error;
    });
  }

  /**
   * Whether `failure`, met while opening a connection, is the server's "too many clients" while
   * the pool has others (gate.ts): then the failure is tried again on those.
   */
  private full(failure: unknown, retry = true): boolean {
    if (!serverFull(failure) || !this.gate.refused()) return false;
    if (retry) this.refusedFull.add(failure as object);
    return true;
  }

  /**
   * Tells the breaker what a statement's end on `sql` said about the database. A connection that
   * could not be opened (`connecting`: the statement was never sent, the error is one of opening a
   * connection, connectFailed(), or the pool has never had an answer) makes the database down; an
   * open connection lost says nothing yet about the next one (one server process ended). Either
   * way the pool is replaced: postgres.js 3.4.9 keeps a statement lost with its connection as the
   * one in progress, and when the next connection is refused with an error (53300), waits for its
   * answer forever, reconnecting at once, in a loop.
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
   * A connection of its own, waited for as a statement does (`waitMs`), on which `begin` (BEGIN and
   * its settings) has run. Should it be lost meanwhile, what the caller sends on it fails at once.
   */
  async reserve(begin: string, deadlineMs = this.options.queryMs, waitMs = this.options.queryMs): Promise<Reserved> {
    const probe = this.breaker.admit();
    const started = performance.now();
    if (!this.gate.take()) await this.queued(waitMs, probe);
    try {
      return await this.take(begin, deadlineMs, waitMs, probe);
    } catch (error) {
      this.gate.leave();
      if (!this.refusedFull.has(error as object)) throw error;
      return this.reserve(begin, deadlineMs, waitMs - (performance.now() - started));
    }
  }

  /** reserve() past the gate: the place is given back by the caller's release(), or by reserve() when this fails. */
  private async take(begin: string, deadlineMs: number, waitMs: number, probe: boolean): Promise<Reserved> {
    const sql = this.sql;
    const reserving = sql.reserve();
    let timer: NodeJS.Timeout | undefined;
    let ours: DatabaseUnavailableError | null = null;
    let withdraw = () => {};
    const late = new Promise<never>((_, reject) => {
      const giveUp = (error: DatabaseUnavailableError) => reject((ours = error));
      timer = setTimeout(() => giveUp(new DatabaseUnavailableError(`no database connection within ${Math.round(waitMs)} ms`, null)), Math.max(0, waitMs));
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
          const failure = driverError(e);
          if (ours && !this.full(failure)) this.learn(sql, failure, false, true);
        },
      );
      if (ours) {
        if (probe) this.breaker.withdrawn();
        throw ours;
      }
      const failure = driverError(error);
      if (!this.full(failure)) this.learn(sql, failure, probe, true);
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
    // Its place at the gate goes with it, once; a failed BEGIN leaves that to reserve().
    const done = () => void (released || (release(), this.gate.leave()));
    return { query: (text, values, deadline = this.options.queryMs) => send(text, values, deadline), release: done };
  }

  stats(): { busy: number; waiting: number; max: number } {
    return { busy: Math.min(this.inUse, this.options.max), waiting: Math.max(0, this.inUse - this.options.max), max: this.options.max };
  }

  /** Lets statements under way finish for up to 5 s, none while the database is known down. */
  async close(): Promise<void> {
    await this.sql.end({ timeout: this.breaker.down ? 0 : 5 });
  }

  /** `text` is the statement's, without its values: what its span shows when tracing is on (lib/trace.ts). */
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
          giveUp(new DatabaseUnavailableError(`no database connection within ${Math.round(deadlineMs)} ms`, null));
          pending.cancel();
        } else {
          this.replace(sql);
          giveUp(new DatabaseUnavailableError(`no answer from the database within ${Math.round(deadlineMs)} ms`, null));
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
      // The connection that answered is open (postgres.js keeps one `state` object per connection).
      if (sql === this.sql) this.gate.opened(pending.state);
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
      // connection (open already) it only met the connection's loss. One sent already that meets
      // "too many clients" (postgres.js opening its lost connection again) may have run: it fails.
      const connecting = !reserved && pending.state === undefined;
      if (reserved || !this.full(failure, connecting)) this.learn(sql, failure, probe, connecting, reserved);
      throw failure;
    } finally {
      clearTimeout(timer);
      this.waiting.delete(withdraw);
      this.inUse--;
    }
  }

  private connect(): postgres.Sql {
    return openDriver(this.options, (id) => {
      const held = this.held.get(id);
      if (held) held.lost ??= new DatabaseUnavailableError('the database connection was lost', { code: 'CONNECTION_CLOSED' });
    });
  }

  /**
   * New connections replace all of `stale`'s, which are cut at once: the server went silent on
   * them, or one of them failed (see learn()).
   */
  private replace(stale: postgres.Sql): void {
    if (this.sql !== stale) return;
    this.sql = this.connect();
    this.gate.renew();
    stale.end({ timeout: 0 }).catch(() => {});
  }
}
