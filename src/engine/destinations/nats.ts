import { performance } from 'node:perf_hooks';
import type { ConnectionOptions, JetStreamClient, MsgHdrs, NatsConnection } from 'nats';
import type { SendRequest, SendResult, Sender } from './sender.js';
import { Connections } from './connections.js';
import { brokerError, brokerHeaders, refusedHost, type BrokerOptions } from './message.js';

/** The subject published to when the endpoint names none: `events.<type>`, so a stream captures `events.>`. */
export const subjectOf = (eventType: string) => `events.${eventType}`;

const DEFAULT_PORT = 4222;

interface Server {
  connection: NatsConnection;
  jetstream: JetStreamClient;
  headers: () => MsgHdrs;
}

/**
 * Publishes to NATS JetStream: a PubAck (the message stored by the stream that captures the
 * subject) is a success, "no responders" (no stream captures it), an error or no answer in time a
 * failed attempt. `Nats-Msg-Id` is the webhook-id, so JetStream's duplicate window drops a repeat
 * (the PubAck then says `duplicate`).
 */
export class NatsSender implements Sender {
  private readonly servers: Connections<Server>;

  constructor(private readonly options: BrokerOptions) {
    this.servers = new Connections((url, lost) => this.open(url, lost), (server) => server.connection.close(), options.idleMs, options.timeoutMs);
  }

  async send(req: SendRequest): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const failure = (error: string, timedOut = false): SendResult => ({ ok: false, status: null, headers: null, body: null, timeMs: elapsed(), error, timedOut });
    const subject = req.route?.subject ?? subjectOf(req.eventType ?? 'unknown');
    try {
      const server = await this.servers.get(req.url);
      const headers = server.headers();
      for (const [name, value] of Object.entries(brokerHeaders(req))) headers.set(name, value);
      const ack = await server.jetstream.publish(subject, Buffer.from(req.body), { msgID: req.headers['webhook-id'], headers, timeout: this.options.timeoutMs });
      const body = JSON.stringify({ stream: ack.stream, seq: ack.seq, duplicate: ack.duplicate });
      return { ok: true, status: null, headers: null, body, timeMs: elapsed(), error: null, timedOut: false };
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === '503') return failure(`no responders: no JetStream stream captures subject "${subject}"`);
      if (code === 'TIMEOUT') return failure(`timeout: no PubAck within ${this.options.timeoutMs} ms`, true);
      return failure(brokerError(error));
    }
  }

  async close(): Promise<void> {
    await this.servers.closeAll();
  }

  /**
   * Connects without the client's own reconnecting (a lost connection is opened again by the next
   * send) and without the servers a cluster announces, which could point the client anywhere.
   */
  private async open(url: string, lost: () => void): Promise<Server> {
    const parsed = new URL(url);
    if (!this.options.allowPrivateTargets) {
      const refused = await refusedHost(parsed.hostname);
      if (refused) throw new Error(refused);
    }
    const user = decodeURIComponent(parsed.username);
    const pass = decodeURIComponent(parsed.password);
    const options: ConnectionOptions = {
      servers: parsed.port ? parsed.host : `${parsed.host}:${DEFAULT_PORT}`,
      name: 'svc-webhooks',
      reconnect: false,
      ignoreClusterUpdates: true,
      timeout: this.options.timeoutMs,
      ...(pass ? { user, pass } : user ? { token: user } : {}),
      ...(parsed.protocol === 'tls:' ? { tls: {} } : {}),
    };
    // Loaded by the first connection: a service without NATS destinations never pays for it at start.
    const nats = await import('nats');
    const connection = await nats.connect(options);
    void connection.closed().then(lost);
    return { connection, jetstream: connection.jetstream(), headers: nats.headers };
  }
}
