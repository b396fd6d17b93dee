import { AsyncLocalStorage } from 'node:async_hooks';
import type { Db, OpenTransaction, Queryable, ScopedTransaction } from './db.js';

/**
 * Request transactions ("scopes"). A POST sent with an Idempotency-Key must store its response in
 * the same transaction as its change (src/http/idempotency/): if the change committed, so did the
 * response a retry gets back. Handlers, stores and the outbox take `ctx.db` and know nothing of
 * this: inside a scope's run(), every query of that Db goes to the scope's transaction and every
 * tx() becomes a savepoint of it. The scope is found through an AsyncLocalStorage, so it follows
 * the request's own async calls and nothing else.
 *
 * Node 20 tracks async context with a hook on every promise once an AsyncLocalStorage is in use,
 * which made a promise-bound loop about twice as slow; the storage is therefore switched off
 * whenever no scope is open, and requests without a key pay nothing.
 */
const storage = new AsyncLocalStorage<Scope>();
let openScopes = 0;

type State = 'open' | 'ending' | 'ended';

class Scope implements ScopedTransaction {
  private state: State = 'open';
  private savepoints = 0;
  private readonly committed: (() => void)[] = [];
  private readonly rolledBack: (() => void)[] = [];

  constructor(
    readonly owner: object,
    private readonly tx: OpenTransaction,
  ) {
    openScopes++;
  }

  get open(): boolean {
    return this.state === 'open';
  }

  query<T>(sql: string, params?: unknown[]): Promise<T[]> {
    return this.tx.query<T>(sql, params);
  }

  /** A tx() inside the scope: a savepoint, so a failure undoes its own statements only, as a transaction would. */
  async nested<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    const name = `scope_${++this.savepoints}`;
    await this.tx.query(`SAVEPOINT ${name}`);
    let result: T;
    try {
      result = await fn(this);
    } catch (error) {
      await this.tx.query(`ROLLBACK TO SAVEPOINT ${name}`).catch(() => {});
      throw error;
    }
    await this.tx.query(`RELEASE SAVEPOINT ${name}`);
    return result;
  }

  defer(onCommit: () => void, onRollback?: () => void): void {
    this.committed.push(onCommit);
    if (onRollback) this.rolledBack.push(onRollback);
  }

  run<T>(fn: () => T): T {
    return storage.run(this, fn);
  }

  /** Commits; a commit that fails (the connection lost on the way) counts as a rollback here and throws. */
  async commit(): Promise<void> {
    if (!this.begin()) return;
    try {
      await this.tx.commit();
    } catch (error) {
      this.end(this.rolledBack);
      throw error;
    }
    this.end(this.committed);
  }

  async rollback(): Promise<void> {
    if (!this.begin()) return;
    try {
      await this.tx.rollback();
    } finally {
      this.end(this.rolledBack);
    }
  }

  /** From here on, statements of the request's async calls go past the scope, to the database itself. */
  private begin(): boolean {
    if (this.state !== 'open') return false;
    this.state = 'ending';
    return true;
  }

  private end(callbacks: (() => void)[]): void {
    this.state = 'ended';
    if (--openScopes === 0) storage.disable();
    // Outside the scope's async context: what they start (a worker's attempts) is not the request's.
    for (const callback of callbacks) storage.exit(callback);
  }
}

/**
 * `db` with scopes: `openTransaction` opens the engine's transaction that a scope holds. Scopes
 * belong to the Db that opened them: a statement on another Db in the same process never joins.
 */
export function withScopes(db: Omit<Db, 'openScope' | 'afterCommit' | 'inScope'>, openTransaction: () => Promise<OpenTransaction>): Db {
  const owner = {};
  const current = (): Scope | null => {
    const scope = storage.getStore();
    return scope !== undefined && scope.owner === owner && scope.open ? scope : null;
  };
  return {
    ...db,
    query: <T>(sql: string, params?: unknown[]) => (current() ?? db).query<T>(sql, params),
    tx: <T>(fn: (q: Queryable) => Promise<T>, options?: { unbounded?: boolean }) => {
      const scope = current();
      return scope ? scope.nested(fn) : db.tx(fn, options);
    },
    openScope: async () => new Scope(owner, await openTransaction()),
    afterCommit: (onCommit, onRollback) => {
      const scope = current();
      if (scope) scope.defer(onCommit, onRollback);
      else onCommit();
    },
    inScope: () => current() !== null,
  };
}
