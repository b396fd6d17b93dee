import pg from 'pg';

type Handlers = Map<string, Set<(payload: string) => void>>;

const MAX_BACKOFF_MS = 30_000;

/**
 * The one connection that holds LISTEN for a process. If it drops (server restart, network), it is
 * re-opened with backoff, every channel is listened to again, and every handler is called once,
 * since notifications sent while it was away are lost: listeners re-check rather than wait for a poll.
 */
export class Listener {
  private client: pg.Client | null = null;
  private connecting: Promise<pg.Client> | null = null;
  private closed = false;
  private backoffMs = 500;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    private readonly url: string,
    private readonly handlers: Handlers,
  ) {}

  /** Starts listening; if the server cannot be reached now, keeps trying in the background. */
  async listen(channel: string): Promise<void> {
    try {
      const client = await this.connection();
      await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch {
      this.scheduleReconnect();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    await this.client?.end().catch(() => {});
    this.client = null;
  }

  private connection(): Promise<pg.Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.open().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async open(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: this.url });
    client.on('notification', (msg) => {
      for (const handler of this.handlers.get(msg.channel) ?? []) handler(msg.payload ?? '');
    });
    const lost = () => {
      if (this.client !== client) return;
      this.client = null;
      this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', lost);
    await client.connect();
    this.client = client;
    return client;
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(async () => {
      this.retry = null;
      try {
        const client = await this.connection();
        for (const channel of this.handlers.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
        this.backoffMs = 500;
        for (const set of this.handlers.values()) for (const handler of set) handler('');
      } catch {
        this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
        this.client?.end().catch(() => {});
        this.client = null;
        this.scheduleReconnect();
      }
    }, this.backoffMs);
    this.retry.unref();
  }
}
