import net from 'node:net';

/**
 * How the proxy treats connections: `pass` forwards them; `blackhole` accepts them and never
 * answers (a host that froze, a network that drops packets); `reset` accepts and resets them at
 * once (RST); `full` answers every PostgreSQL startup with "sorry, too many clients already"
 * (SQLSTATE 53300) and closes. Refusal (nothing listening) is `stop()`.
 */
export type ProxyMode = 'pass' | 'blackhole' | 'reset' | 'full';

/** PostgreSQL's ErrorResponse for a server at max_connections, as it sends it before closing. */
function tooManyClients(): Buffer {
  const fields = Buffer.concat(
    [['S', 'FATAL'], ['V', 'FATAL'], ['C', '53300'], ['M', 'sorry, too many clients already']].map(([k, v]) => Buffer.from(`${k}${v}\0`)),
  );
  const body = Buffer.concat([fields, Buffer.from([0])]);
  const head = Buffer.alloc(5);
  head.write('E', 0);
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

/** The SSLRequest code: a client asking for TLS first, answered 'N' (no TLS here). */
const SSL_REQUEST = 80877103;

/**
 * A TCP proxy on 127.0.0.1 in front of a real server (Redis, PostgreSQL), to simulate outages for
 * one client without touching the shared server: `stop()` refuses connections and cuts the open
 * ones (server down), `hang()` keeps connections open but holds every byte (server stuck),
 * `cutAt()` cuts everything at a chosen message, `setMode()` turns to a kind of fault (ProxyMode),
 * `start()`/`release()`/`setMode('pass')` bring it back. `attempts` counts the connections it accepted.
 */
export class TcpProxy {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  private held: (() => void)[] | null = null;
  private cut: { pattern: string; deliver: boolean; done: () => void } | null = null;
  private mode: ProxyMode = 'pass';
  /** Connections accepted in a fault mode, kept silent until the mode ends. */
  private readonly silent = new Set<net.Socket>();
  port = 0;
  /** Connections accepted since the start (or the last `resetAttempts()`). */
  attempts = 0;
  /** Pass-through connections open now, and the most allowed at once (PostgreSQL's free connection slots). */
  private readonly passing = new Set<net.Socket>();
  private slots = Infinity;

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

  /**
   * Turns to `mode` for new connections; the open ones are cut (reset, full), frozen (blackhole:
   * nothing more passes either way), or, back to pass, the frozen ones are cut.
   */
  setMode(mode: ProxyMode): void {
    this.mode = mode;
    if (mode === 'pass') {
      for (const socket of this.silent) socket.destroy();
      this.silent.clear();
      return;
    }
    for (const socket of [...this.sockets]) {
      if (mode === 'blackhole') {
        socket.removeAllListeners('data');
        socket.on('data', () => {});
        this.silent.add(socket);
      } else socket.resetAndDestroy();
    }
  }

  /**
   * A server with `slots` free connection slots: beyond that many open pass-through connections, a
   * new one is answered "too many clients" (as in `full` mode). `Infinity` lifts the limit.
   */
  setSlots(slots: number): void {
    this.slots = slots;
  }

  resetAttempts(): void {
    this.attempts = 0;
  }

  private connect(client: net.Socket): void {
    this.attempts++;
    client.on('error', () => client.destroy());
    if (this.mode === 'reset') return void client.resetAndDestroy();
    if (this.mode === 'blackhole') {
      this.silent.add(client);
      client.on('data', () => {});
      client.on('close', () => this.silent.delete(client));
      return;
    }
    if (this.mode === 'full' || this.passing.size >= this.slots) return this.refuseStartup(client);
    this.passing.add(client);
    client.on('close', () => this.passing.delete(client));
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

  /** Answers the client's startup message (after declining TLS) with 53300 and closes. */
  private refuseStartup(client: net.Socket): void {
    let buffered = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 8) {
        const length = buffered.readInt32BE(0);
        if (buffered.length < length) return;
        const code = buffered.readInt32BE(4);
        buffered = buffered.subarray(length);
        if (code === SSL_REQUEST) client.write('N');
        else return void client.end(tooManyClients());
      }
    });
  }

  /** Refuses new connections and cuts the open ones. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    for (const socket of this.silent) socket.destroy();
    this.silent.clear();
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
