import net from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of a real server (Redis, PostgreSQL), to simulate outages for
 * one client without touching the shared server: `stop()` refuses connections and cuts the open
 * ones (server down), `hang()` keeps connections open but holds every byte (server stuck),
 * `cutAt()` cuts everything at a chosen message, `start()`/`release()` bring it back.
 */
export class TcpProxy {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  private held: (() => void)[] | null = null;
  private cut: { pattern: string; deliver: boolean; done: () => void } | null = null;
  port = 0;

  constructor(
    private readonly targetPort: number,
    private readonly targetHost = '127.0.0.1',
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const server = net.createServer((client) => this.connect(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  private connect(client: net.Socket): void {
    const upstream = net.connect(this.targetPort, this.targetHost);
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('error', () => socket.destroy());
      socket.on('close', () => {
        this.sockets.delete(socket);
        const other = socket === client ? upstream : client;
        // An upstream ended by cutHere closes once the server has read its last message.
        if (!other.writableEnded) other.destroy();
      });
    }
    const forward = (to: net.Socket) => (chunk: Buffer) => {
      const cut = this.cut;
      if (to === upstream && cut && chunk.includes(cut.pattern)) {
        this.cut = null;
        this.cutHere(client, upstream, cut.deliver ? chunk : null);
        cut.done();
        return;
      }
      const send = () => to.write(chunk);
      if (this.held) this.held.push(send);
      else send();
    };
    client.on('data', forward(upstream));
    upstream.on('data', forward(client));
  }

  /** Refuses new connections and cuts the open ones. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /**
   * The database lost at a chosen moment: the next message from a client that contains `pattern`
   * (e.g. a COMMIT) is delivered to the server (`deliver`) or dropped, and then every connection is
   * cut and new ones refused, so the client never hears the server's answer. A delivered message is
   * still carried out: its connection is closed after it (the server reads it to the end), while
   * the client's side is cut at once. Resolves when it has happened; `start()` brings the proxy back.
   */
  cutAt(pattern: string, deliver: boolean): Promise<void> {
    return new Promise((resolve) => (this.cut = { pattern, deliver, done: resolve }));
  }

  private cutHere(client: net.Socket, upstream: net.Socket, last: Buffer | null): void {
    this.sockets.delete(upstream);
    if (last) upstream.end(last);
    else upstream.destroy();
    client.destroy();
    void this.stop();
  }

  /** Keeps connections open but forwards nothing until `release()`. */
  hang(): void {
    this.held ??= [];
  }

  release(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const send of held) send();
  }
}
