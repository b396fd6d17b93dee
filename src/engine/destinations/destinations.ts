import { kindOf, type DestinationKind } from './route.js';
import { HttpSender, type SendRequest, type SendResult, type Sender } from './sender.js';
import { AmqpSender } from './amqp.js';
import type { BrokerOptions } from './message.js';
import { NatsSender } from './nats.js';

/** A broker connection unused this long is closed. */
export const BROKER_IDLE_MS = 60_000;

/**
 * The sender the engine attempts through: the URL's scheme picks the destination
 * (docs/destinations.md), an HTTPS receiver, RabbitMQ or NATS JetStream; each is a Sender of its own,
 * and the brokers' are made when first needed.
 */
export class Destinations implements Sender {
  private readonly senders = new Map<DestinationKind, Sender>();

  constructor(
    private readonly http: Sender,
    private readonly brokers: BrokerOptions,
  ) {
    this.senders.set('http', http);
  }

  send(request: SendRequest): Promise<SendResult> {
    const kind = kindOf(request.url);
    if (kind === null) {
      return Promise.resolve({ ok: false, status: null, headers: null, body: null, timeMs: 0, error: 'refused: the endpoint URL names no destination', timedOut: false });
    }
    return this.sender(kind).send(request);
  }

  async close(): Promise<void> {
    await Promise.all([...this.senders.values()].map((sender) => sender.close()));
  }

  private sender(kind: DestinationKind): Sender {
    let sender = this.senders.get(kind);
    if (sender === undefined) {
      sender = kind === 'amqp' ? new AmqpSender(this.brokers) : new NatsSender(this.brokers);
      this.senders.set(kind, sender);
    }
    return sender;
  }
}

/** The sender a worker uses, from the service's settings. */
export function createSender(config: { deliveryTimeoutMs: number; allowPrivateTargets: boolean }): Sender {
  const http = new HttpSender({ timeoutMs: config.deliveryTimeoutMs, allowPrivateTargets: config.allowPrivateTargets });
  return new Destinations(http, { timeoutMs: config.deliveryTimeoutMs, allowPrivateTargets: config.allowPrivateTargets, idleMs: BROKER_IDLE_MS });
}
