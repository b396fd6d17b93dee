import { subscriptionPatterns } from '../engine/log/patterns.js';
import { newSigningSecret } from '../engine/delivery/secrets.js';
import { UsageError } from './args.js';
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionOf, isHttpUrl, type Connection } from './connection.js';

export const LISTEN_HELP = `svc listen (--forward-to URL | --forward TYPE=URL ... | --print-json) [--events TYPE] [--api-key KEY] [--base-url URL] [--workspace WSP] [--secret whsec_...] [--json]
  Follows the workspace's live event stream (GET /v1/events/stream) and POSTs each event to a local
  URL, signed per Standard Webhooks as a webhook delivery is (webhook-id, webhook-timestamp,
  webhook-signature), with a signing secret printed at start: give it to your receiver. Prints
  "Ready!" once the service has accepted the stream, then one line per event and URL: time, type,
  id, your server's status and how long it took. If the service cannot be reached it says so and
  retries; if the connection drops, it reconnects and resumes after the last event it received:
  nothing is missed or sent twice. Events are forwarded one at a time, in order, once each (a failed
  one is reported, not retried). Ctrl-C stops it.

  --forward-to URL  where to POST every event (of --events, when given)
  --forward TYPE=URL  where to POST the events of TYPE, a type or a prefix pattern such as
                    product.* (* for every event); repeat it to send types to different URLs
  --print-json      print each event's body, one per line, on standard output (everything else
                    goes to standard error then); forwarding is optional with it
  --events TYPE     only this type, or a prefix pattern such as product.* (default: every event)
${CONNECTION_HELP}
  --secret whsec_   sign with this secret instead of a new one (so a receiver keeps its setting)
  --json            one JSON object per line instead of text

Examples:
  SVC_API_KEY=svc_sk_... svc listen --forward-to http://localhost:4242/webhooks --events 'product.*'
  svc listen --forward 'order.*=http://localhost:4242/orders' --forward 'product.*=http://localhost:5000/catalog'`;

export const LISTEN_FLAGS = {
  'forward-to': { type: 'string' },
  forward: { type: 'string', multiple: true },
  'print-json': { type: 'boolean' },
  events: { type: 'string' },
  secret: { type: 'string' },
  ...CONNECTION_FLAGS,
} as const;

/** Events of `events` (a type, a prefix pattern, or * for all) go to `url`. */
export interface Route {
  events: string;
  url: string;
}

export interface ListenOptions extends Connection {
  routes: Route[];
  /** The stream's filter (`type`): --events, else the one pattern every route shares; null for every event. */
  filter: string | null;
  printJson: boolean;
  secret: string;
  json: boolean;
}

/** Whether an event of `type` matches a route's `events`. */
export function matches(events: string, type: string): boolean {
  return events === '*' || subscriptionPatterns(type).includes(events);
}

function routeOf(text: string): Route {
  const cut = text.indexOf('=');
  const events = text.slice(0, cut).trim();
  const url = text.slice(cut + 1).trim();
  if (cut < 1 || events === '') throw new UsageError(`--forward takes TYPE=URL, such as 'order.*=http://localhost:4242/orders'; got "${text}"`);
  if (!isHttpUrl(url)) throw new UsageError(`--forward ${events}= must be followed by an http:// or https:// URL, got "${url}"`);
  return { events, url };
}

/** The options of `svc listen` from its flags and the environment; a wrong one is a UsageError. */
export function listenOptions(flags: Record<string, unknown>, env: NodeJS.ProcessEnv): ListenOptions {
  const text = (name: string) => (typeof flags[name] === 'string' && flags[name] !== '' ? (flags[name] as string) : null);
  const events = text('events');
  const routes = ((flags.forward as string[] | undefined) ?? []).map(routeOf);
  const forwardTo = text('forward-to');
  if (forwardTo) {
    if (!isHttpUrl(forwardTo)) throw new UsageError(`--forward-to must be an http:// or https:// URL, got "${forwardTo}"`);
    routes.unshift({ events: events ?? '*', url: forwardTo });
  }
  const printJson = flags['print-json'] === true;
  if (routes.length === 0 && !printJson) {
    throw new UsageError('--forward-to is required: the URL to POST each event to (or --forward TYPE=URL, or --print-json; svc listen --help)');
  }
  const patterns = new Set(routes.map((r) => r.events));
  const shared = patterns.size === 1 && !printJson ? [...patterns][0] : null;
  const filter = events ?? (shared === '*' ? null : shared);
  const secret = text('secret') ?? newSigningSecret();
  if (!/^whsec_[A-Za-z0-9+/_-]{16,}={0,2}$/.test(secret)) throw new UsageError('--secret must be a signing secret: whsec_ and base64');
  return { ...connectionOf(flags, env), routes, filter, printJson, secret, json: flags.json === true };
}
