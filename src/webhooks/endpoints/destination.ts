import { validation } from '../../http/errors.js';
import type { SecretBox } from '../../lib/secretbox.js';
import { kindOf, kindOfProtocol, type DestinationKind, type Route } from '../../engine/destinations/route.js';

export { kindOf, kindOfProtocol, type DestinationKind, type Route };

/** The endpoint fields of each broker, by their API names. */
const FIELDS_OF: Record<keyof Route, DestinationKind> = { exchange: 'amqp', routingKey: 'amqp', subject: 'nats' };

const SCHEMES_OF: Record<DestinationKind, string> = { http: 'https://', amqp: 'amqp:// or amqps://', nats: 'nats:// or tls://' };

/**
 * Refuses a route field set (not null) with a URL whose destination does not use it: `exchange`
 * and `routingKey` belong to amqp:// and amqps://, `subject` to nats:// and tls://.
 */
export function checkRoute(kind: DestinationKind, route: Partial<Route>): void {
  const wrong = (Object.keys(FIELDS_OF) as (keyof Route)[]).filter((field) => route[field] != null && FIELDS_OF[field] !== kind);
  if (wrong.length === 0) return;
  const details = wrong.map((field) => ({
    path: `body.${field}`,
    message: `${field} applies to ${SCHEMES_OF[FIELDS_OF[field]]} endpoints, not to ${SCHEMES_OF[kind]}`,
  }));
  throw validation(`Invalid ${wrong.join(', ')}: ${details[0].message}.`, details);
}

/** What a password (or a NATS token) is shown as. */
export const REDACTED = '***';

/**
 * A broker URL with its secret part redacted, as every read shows it: the password
 * (`amqp://user:***@host/vhost`), or for NATS a user name alone, which is a token
 * (`nats://***@host`). Null when the URL carries no secret.
 */
export function redactUrl(url: string): string | null {
  const match = /^([a-z][a-z0-9+.-]*:\/\/)([^@/?#]*)@/i.exec(url);
  if (!match) return null;
  const [whole, scheme, userinfo] = match;
  const colon = userinfo.indexOf(':');
  let shown: string;
  if (colon >= 0) shown = `${userinfo.slice(0, colon)}:${REDACTED}`;
  else if (kindOf(url) === 'nats') shown = REDACTED;
  else return null;
  return `${scheme}${shown}@${url.slice(whole.length)}`;
}

/**
 * The two columns of an endpoint URL: `url` as every read shows it, and `url_enc`, the whole URL
 * sealed, when it carries a secret (null otherwise: the URL is stored as given).
 */
export function sealUrl(box: SecretBox, url: string): { url: string; urlEnc: string | null } {
  const shown = redactUrl(url);
  return shown === null ? { url, urlEnc: null } : { url: shown, urlEnc: box.encrypt(url) };
}
