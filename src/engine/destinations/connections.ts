/**
 * Connections to brokers, one per broker URL, shared by every delivery to it. A connection is
 * opened by the first send that needs it (sends meanwhile wait for the same opening), forgotten when
 * the broker closes it or it fails (a broker restart: the next send opens a new one), and closed
 * after `idleMs` without a send.
 */
export class Connections<C> {
  private readonly entries = new Map<string, Entry<C>>();

  constructor(
    private readonly open: (url: string, lost: () => void) => Promise<C>,
    private readonly close: (connection: C) => Promise<void>,
    private readonly idleMs: number,
  ) {}

  /** The open connection to `url`, opening it if need be; rejects when it cannot be opened. */
  get(url: string): Promise<C> {
    let entry = this.entries.get(url);
    if (entry === undefined) {
      const created: Entry<C> = { connection: null as unknown as Promise<C>, timer: null };
      created.connection = this.open(url, () => this.forget(url, created));
      // A failed opening is not kept: the next send tries again.
      created.connection.catch(() => this.forget(url, created));
      this.entries.set(url, (entry = created));
    }
    this.keepAlive(url, entry);
    return entry.connection;
  }

  /** How many broker URLs have a connection open or opening. */
  get size(): number {
    return this.entries.size;
  }

  /** Closes every connection. */
  async closeAll(): Promise<void> {
    const entries = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(entries.map((entry) => this.shut(entry)));
  }

  private keepAlive(url: string, entry: Entry<C>): void {
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = setTimeout(() => {
      if (this.entries.get(url) !== entry) return;
      this.entries.delete(url);
      void this.shut(entry);
    }, this.idleMs);
    entry.timer.unref();
  }

  private forget(url: string, entry: Entry<C>): void {
    if (entry.timer) clearTimeout(entry.timer);
    if (this.entries.get(url) === entry) this.entries.delete(url);
  }

  private async shut(entry: Entry<C>): Promise<void> {
    if (entry.timer) clearTimeout(entry.timer);
    const connection = await entry.connection.catch(() => null);
    if (connection !== null) await this.close(connection).catch(() => undefined);
  }
}

interface Entry<C> {
  connection: Promise<C>;
  timer: NodeJS.Timeout | null;
}
