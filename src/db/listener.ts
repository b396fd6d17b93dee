import postgres from 'postgres';

const MAX_BACKOFF_MS = 5_000;

/** How often an idle LISTEN connection is checked: a silent server sends no error, only nothing. */
const HEARTBEAT_MS = 5_000;

export interface ListenerOptions {
  url: string;
  settings: string;
  connectMs: number;
  queryMs: number;
  keepAliveMs: number;
}

const quoted = (channel: string) => `"${channel.replace(/"/g, '""')}"`;

/**
 * The one connection that holds LISTEN for a process. If it drops (server restart, network) or
 * stops answering (its heartbeat gets no reply in time), it is opened again with backoff and every
 * channel is listened to again. Notifications sent while it is away are lost, so every handler is
 * called with an empty payload when the connection is lost and again when it is back: listeners
 * re-check rather than wait for a poll, and caches kept valid by notifications start afresh.
 */
export class Listener {
  private readonly handlers = new Map<string, Set<(payload: string) => void>>();
  private sql: postgres.Sql | null = null;
  private connecting: Promise<postgres.Sql> | null = null;
  private closed = false;
  private backoffMs = 250;
  private retry: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;

  constructor(private readonly options: ListenerOptions) {}

  /** Calls `onNotify` for every NOTIFY on `channel`; if the server cannot be reached now, keeps trying in the background. */
  async listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    let set = this.handlers.get(channel);
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
      try {
        await this.ask(await this.connection(), `LISTEN ${quoted(channel)}`);
      } catch {
        this.lose(this.sql);
      }
    }
    set.add(onNotify);
    return async () => {
      set.delete(onNotify);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    if (this.heartbeat) clearInterval(this.heartbeat);
    const sql = this.sql;
    this.sql = null;
    await sql?.end({ timeout: 1 }).catch(() => {});
  }

  /** One statement, failed when the server has not answered within the query time-out. */
  private async ask(sql: postgres.Sql, statement: string): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const pending = sql.unsafe(statement);
    try {
      await Promise.race([
        pending,
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('no answer from the database')), this.options.queryMs))),
      ]);
    } finally {
      pending.catch(() => {});
      clearTimeout(timer);
    }
  }

  private connection(): Promise<postgres.Sql> {
    if (this.sql) return Promise.resolve(this.sql);
    this.connecting ??= this.open().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async open(): Promise<postgres.Sql> {
    const { options } = this;
    const sql: postgres.Sql = postgres(options.url, {
      max: 1,
      // Kept for the process's life: postgres.js would otherwise renew it every 30-60 minutes.
      max_lifetime: null,
      connect_timeout: Math.max(1, Math.ceil(options.connectMs / 1000)),
      keep_alive: options.keepAliveMs > 0 ? Math.max(1, Math.round(options.keepAliveMs / 1000)) : null,
      connection: { options: options.settings },
      onnotice: () => {},
      fetch_types: false,
      // onnotify is an option of postgres.js that its types do not declare.
      onnotify: (channel: string, payload: string) => {
        for (const handler of this.handlers.get(channel) ?? []) handler(payload ?? '');
      },
      onclose: () => this.lose(sql),
    } as postgres.Options<Record<string, postgres.PostgresType>>);
    try {
      await this.ask(sql, 'SELECT 1');
    } catch (error) {
      sql.end({ timeout: 0 }).catch(() => {});
      throw error;
    }
    this.sql = sql;
    this.heartbeat ??= setInterval(() => {
      const current = this.sql;
      if (current) this.ask(current, 'SELECT 1').catch(() => this.lose(current));
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
    return sql;
  }

  /** The connection `sql` is gone or silent: drop it, tell every handler, and reconnect. */
  private lose(sql: postgres.Sql | null): void {
    if (sql && this.sql === sql) {
      this.sql = null;
      sql.end({ timeout: 0 }).catch(() => {});
      this.notifyAll();
    }
    this.scheduleReconnect();
  }

  private notifyAll(): void {
    for (const set of this.handlers.values()) for (const handler of set) handler('');
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retry || this.sql) return;
    this.retry = setTimeout(async () => {
      this.retry = null;
      try {
        const sql = await this.connection();
        for (const channel of this.handlers.keys()) await this.ask(sql, `LISTEN ${quoted(channel)}`);
        this.backoffMs = 250;
        this.notifyAll();
      } catch {
        this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
        const sql = this.sql;
        this.sql = null;
        sql?.end({ timeout: 0 }).catch(() => {});
        this.scheduleReconnect();
      }
    }, this.backoffMs);
    this.retry.unref();
  }
}
