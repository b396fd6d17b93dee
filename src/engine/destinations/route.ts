/**
 * Which destination an endpoint URL names, by its scheme (docs/destinations.md): an HTTPS
 * receiver, a RabbitMQ broker (AMQP 0-9-1) or a NATS server with JetStream.
 */
export type DestinationKind = 'http' | 'amqp' | 'nats';

const KINDS: Record<string, DestinationKind> = {
  'https:': 'http',
  'http:': 'http',
  'amqp:': 'amqp',
  'amqps:': 'amqp',
  'nats:': 'nats',
  'tls:': 'nats',
};

/** The destination of a URL's scheme (`https:`, `amqp:`, ...); null for a scheme no destination takes. */
export function kindOfProtocol(protocol: string): DestinationKind | null {
  return KINDS[protocol] ?? null;
}

export function kindOf(url: string): DestinationKind | null {
  const match = /^([a-z][a-z0-9+.-]*:)/i.exec(url);
  return match ? kindOfProtocol(match[1].toLowerCase()) : null;
}

/** Where a broker destination publishes; null fields take their defaults. */
export interface Route {
  exchange: string | null;
  routingKey: string | null;
  subject: string | null;
}
