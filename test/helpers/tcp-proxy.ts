import net from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of a real server (Redis), to simulate outages for one client
 * without touching the shared server: `stop()` refuses connections and cuts the open ones (Redis
 * down), `hang()` keeps connections open but holds every byte (Redis stuck), `start()`/`release()`
 * bring it back.
 */
export class TcpProxy {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  private held: (() => void)[] | null = null;
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
        (socket === client ? upstream : client).destroy();
      });
    }
    const forward = (to: net.Socket) => (chunk: Buffer) => {
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
