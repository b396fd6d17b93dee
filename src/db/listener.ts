import pg from 'pg';

type Handlers = Map<string, Set<(payload: string) => void>>;

const MAX_BACKOFF_MS = 5_000;

/** How often an idle LISTEN connection is checked: a silent server sends no error, only nothing. */
const HEARTBEAT_MS = 5_000;

/**
 * The one connection that holds LISTEN for a process. If it drops (server restart, network) or
 * stops answering (its heartbeat gets no reply in time), it is re-opened with backoff and every
 * channel is listened to again. Notifications sent while it is away are lost, so every handler is
 * called with an empty payload when the connection is lost and again when it is back: listeners
 * re-check rather than wait for a poll, and caches kept valid by notifications start afresh.
 */
export class Listener {
  private client: pg.Client | null = null;
  private connecting: Promise<pg.Client> | null = null;
  private closed = false;
  private backoffMs = 250;
  private retry: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;

  constructor(
    private readonly url: string,
    private readonly handlers: Handlers,
    private readonly timeouts: { connectMs: number; queryMs: number; keepAliveMs: number },
  ) {}

  /** Starts listening; if the server cannot be reached now, keeps trying in the background. */
  async listen(channel: string): Promise<void> {
    try {
      const client = await this.connection();
      await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch {
      this.lose(this.client);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    if (this.heartbeat) clearInterval(this.heartbeat);
    const client = this.client;
    this.client = null;
    // A silent server would leave end() waiting for its answer: the socket is closed regardless.
    if (client) await Promise.race([client.end().catch(() => {}), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
  }

  private connection(): Promise<pg.Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.open().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async open(): Promise<pg.Client> {
    const client = new pg.Client({
      connectionString: this.url,
      connectionTimeoutMillis: this.timeouts.connectMs,
      query_timeout: this.timeouts.queryMs,
      keepAlive: this.timeouts.keepAliveMs > 0,
      keepAliveInitialDelayMillis: this.timeouts.keepAliveMs,
    });
    client.on('notification', (msg) => {
      for (const handler of this.handlers.get(msg.channel) ?? []) handler(msg.payload ?? '');
    });
    client.on('error', () => this.lose(client));
    client.on('end', () => this.lose(client));
    try {
      await client.connect();
    } catch (error) {
      client.end().catch(() => {});
      throw error;
    }
    this.client = client;
    this.heartbeat ??= setInterval(() => {
      const current = this.client;
      if (current) current.query('SELECT 1').catch(() => this.lose(current));
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
    return client;
  }

  /** The connection `client` is gone or silent: drop it, tell every handler, and reconnect. */
  private lose(client: pg.Client | null): void {
    if (client && this.client === client) {
      this.client = null;
      client.end().catch(() => {});
      this.notifyAll();
    }
    this.scheduleReconnect();
  }

  private notifyAll(): void {
    for (const set of this.handlers.values()) for (const handler of set) handler('');
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retry || this.client) return;
    this.retry = setTimeout(async () => {
      this.retry = null;
      try {
        const client = await this.connection();
        for (const channel of this.handlers.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
        this.backoffMs = 250;
        this.notifyAll();
      } catch {
        this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
        const client = this.client;
        this.client = null;
        client?.end().catch(() => {});
        this.scheduleReconnect();
      }
    }, this.backoffMs);
    this.retry.unref();
  }
}
