import { useState, type FormEvent } from 'react';
import type { WebhookEndpoint } from '@svc/sdk';
import { useCatalog } from '../../api/catalog';
import { ErrorBox } from '../../components/error-box';

export interface EndpointFields {
  /** Left out when an edit keeps the URL (a broker's is shown with its password redacted, and cannot be sent back). */
  url?: string;
  description: string | null;
  subscribedEvents: string[];
  rateLimit: number | null;
  headers: Record<string, string>;
  ordering: 'none' | 'subject';
  exchange?: string | null;
  routingKey?: string | null;
  subject?: string | null;
  signatureScheme?: 'v1' | 'v1a';
  propagateTrace: boolean;
}

/** The destination a URL names by its scheme, as the service reads it (docs/destinations.md). */
export function destinationOf(url: string): 'http' | 'amqp' | 'nats' {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url.trim())?.[1].toLowerCase();
  if (scheme === 'amqp' || scheme === 'amqps') return 'amqp';
  if (scheme === 'nats' || scheme === 'tls') return 'nats';
  return 'http';
}

/** `product.created` → `product`: the group a type is picked in, whose `product.*` subscribes to all of it. */
const groupOf = (type: string) => type.split('.')[0];

/**
 * The catalog picker: each group of event types can be taken whole (its prefix pattern, which also
 * takes types added to the catalog later) or type by type.
 */
function CatalogPicker({ value, onChange }: { value: string[]; onChange(next: string[]): void }) {
  const catalog = useCatalog();
  const types = catalog.data ?? [];
  const groups = [...new Set(types.map((t) => groupOf(t.type)))];
  const has = (entry: string) => value.includes(entry);
  const toggle = (entry: string, on: boolean, drop: (v: string) => boolean = () => false) =>
    onChange([...value.filter((v) => v !== entry && !drop(v)), ...(on ? [entry] : [])]);

  return (
    <fieldset className="catalog" data-testid="catalog-picker">
      <legend>Events to receive</legend>
      <ErrorBox error={catalog.error} retry={catalog.reload} />
      {groups.map((group) => {
        const whole = has(`${group}.*`);
        return (
          <div key={group} className="catalog-group">
            <label>
              <input
                type="checkbox"
                checked={whole}
                onChange={(e) => toggle(`${group}.*`, e.target.checked, (v) => groupOf(v) === group)}
              />
              <strong>
                Every <code>{group}</code> event (<code>{group}.*</code>)
              </strong>
            </label>
            {types
              .filter((t) => groupOf(t.type) === group)
              .map((t) => (
                <label key={t.type} className="catalog-type">
                  <input type="checkbox" checked={whole || has(t.type)} disabled={whole} onChange={(e) => toggle(t.type, e.target.checked)} />
                  <code>{t.type}</code> <small className="muted">{t.description}</small>
                </label>
              ))}
          </div>
        );
      })}
    </fieldset>
  );
}

/** A header row being edited; `kept` is the stored value, sent again when the value is left empty. */
interface HeaderRow {
  key: number;
  name: string;
  value: string;
  kept?: string;
}
const MAX_HEADERS = 20;
let nextKey = 0;

/**
 * Extra request headers, up to 20. Stored values are never put back on the screen: a row of a saved
 * header shows its name and an empty value, which keeps the stored one unless something is typed.
 */
function HeadersEditor({ rows, onChange }: { rows: HeaderRow[]; onChange(next: HeaderRow[]): void }) {
  const set = (key: number, change: Partial<HeaderRow>) => onChange(rows.map((r) => (r.key === key ? { ...r, ...change } : r)));
  return (
    <fieldset data-testid="headers-editor">
      <legend>Extra request headers</legend>
      <small>Sent with every delivery, e.g. a credential your receiver asks for. Stored encrypted; values are not shown again after saving.</small>
      {rows.map((row, i) => (
        <div key={row.key} className="grid header-row">
          <label>
            Header {i + 1} name
            <input value={row.name} required maxLength={100} autoComplete="off" spellCheck={false} placeholder="x-api-key" onChange={(e) => set(row.key, { name: e.target.value })} />
          </label>
          <label>
            Header {i + 1} value
            <input
              type="password"
              value={row.value}
              required={row.kept === undefined}
              maxLength={1000}
              autoComplete="new-password"
              placeholder={row.kept === undefined ? '' : 'unchanged'}
              onChange={(e) => set(row.key, { value: e.target.value })}
            />
          </label>
          <button type="button" className="secondary outline small" aria-label={`Remove header ${i + 1}`} onClick={() => onChange(rows.filter((r) => r.key !== row.key))}>
            Remove
          </button>
        </div>
      ))}
      <button type="button" className="secondary outline small" disabled={rows.length >= MAX_HEADERS} onClick={() => onChange([...rows, { key: nextKey++, name: '', value: '' }])}>
        Add header
      </button>
    </fieldset>
  );
}

/** Create and edit share this form: URL, description, the events picked from the catalog, a rate limit. */
export function EndpointForm({
  initial,
  submitLabel,
  onSubmit,
  error,
  running,
}: {
  initial?: WebhookEndpoint;
  submitLabel: string;
  onSubmit(fields: EndpointFields): void;
  error: unknown;
  running: boolean;
}) {
  const [events, setEvents] = useState<string[]>(initial?.subscribedEvents ?? []);
  const [url, setUrl] = useState(initial?.url ?? '');
  const destination = destinationOf(url);
  const [missing, setMissing] = useState(false);
  const [headers, setHeaders] = useState<HeaderRow[]>(() => Object.entries(initial?.headers ?? {}).map(([name, kept]) => ({ key: nextKey++, name, value: '', kept })));
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (events.length === 0) return setMissing(true);
    const form = new FormData(event.currentTarget);
    const rate = String(form.get('rateLimit') ?? '').trim();
    const description = String(form.get('description') ?? '').trim();
    const text = (name: string) => String(form.get(name) ?? '').trim() || null;
    const route =
      destination === 'amqp' ? { exchange: text('exchange'), routingKey: text('routingKey') } : destination === 'nats' ? { subject: text('subject') } : {};
    onSubmit({
      ...(initial && url.trim() === initial.url ? {} : { url: url.trim() }),
      ...route,
      ...(initial ? {} : { signatureScheme: form.get('signatureScheme') === 'v1a' ? 'v1a' : 'v1' }),
      description: description || null,
      subscribedEvents: events,
      rateLimit: rate ? Number(rate) : null,
      headers: Object.fromEntries(headers.map((h) => [h.name.trim().toLowerCase(), h.value || (h.kept ?? '')])),
      ordering: form.get('ordering') === 'subject' ? 'subject' : 'none',
      propagateTrace: form.get('propagateTrace') === 'on',
    });
  };
  return (
    <form onSubmit={submit} className="endpoint-form">
      <label>
        URL
        <input name="url" type="url" required maxLength={2048} value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://example.com/webhooks" />
        <small>
          Where deliveries are POSTed, signed per Standard Webhooks: https:// (http:// too where the service allows local targets); or a broker they are published
          to: amqp:// or amqps:// (RabbitMQ), nats:// or tls:// (NATS JetStream), user and password allowed, stored encrypted and shown as ***.
        </small>
      </label>
      {destination === 'amqp' ? (
        <div className="grid" data-testid="amqp-fields">
          <label>
            Exchange
            <input name="exchange" maxLength={255} defaultValue={initial?.exchange ?? ''} placeholder="amq.topic" spellCheck={false} />
            <small>Empty: amq.topic. It must exist on the broker.</small>
          </label>
          <label>
            Routing key
            <input name="routingKey" maxLength={255} defaultValue={initial?.routingKey ?? ''} placeholder="the event type" spellCheck={false} />
            <small>Empty: the event type (product.created), so a queue binds product.*.</small>
          </label>
        </div>
      ) : null}
      {destination === 'nats' ? (
        <label data-testid="nats-fields">
          Subject
          <input name="subject" maxLength={255} defaultValue={initial?.subject ?? ''} placeholder="events.<type>" spellCheck={false} />
          <small>Empty: events.&lt;type&gt; (events.product.created). A JetStream stream must capture it.</small>
        </label>
      ) : null}
      {initial ? null : (
        <label>
          Signature scheme
          <select name="signatureScheme" defaultValue="v1" aria-describedby="signature-help">
            <option value="v1">v1: HMAC-SHA256 with a shared signing secret</option>
            <option value="v1a">v1a: ed25519, verified with a public key</option>
          </select>
          <small id="signature-help">v1a suits receivers that cannot keep a secret: the service keeps the private key and shows the public key. Set at creation.</small>
        </label>
      )}
      <label>
        Description
        <input name="description" maxLength={500} defaultValue={initial?.description ?? ''} />
      </label>
      <CatalogPicker
        value={events}
        onChange={(next) => {
          setEvents(next);
          setMissing(false);
        }}
      />
      {missing ? (
        <p className="error" role="alert">
          Pick at least one event.
        </p>
      ) : null}
      <label>
        Rate limit (deliveries per second, empty for none)
        <input name="rateLimit" type="number" min={1} max={100000} step={1} inputMode="numeric" defaultValue={initial?.rateLimit ?? ''} />
      </label>
      <HeadersEditor rows={headers} onChange={setHeaders} />
      <label>
        Ordering
        <select name="ordering" defaultValue={initial?.ordering ?? 'none'} aria-describedby="ordering-help">
          <option value="none">none: deliveries are independent</option>
          <option value="subject">subject: one subject's deliveries one at a time, oldest first</option>
        </select>
        <small id="ordering-help">
          With subject ordering a delivery that keeps failing holds back the later ones of its subject until its retries run out (head-of-line blocking).
        </small>
      </label>
      <label>
        <input type="checkbox" name="propagateTrace" defaultChecked={initial?.propagateTrace ?? false} aria-describedby="propagate-trace-help" /> Send trace context
        <small id="propagate-trace-help">
          Each request carries a W3C <code>traceparent</code> header while the service's tracing is on, so the receiver's spans join the trace.
        </small>
      </label>
      <ErrorBox error={error} />
      <button type="submit" aria-busy={running} disabled={running}>
        {submitLabel}
      </button>
    </form>
  );
}
