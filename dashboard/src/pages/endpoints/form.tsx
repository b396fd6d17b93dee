import { useState, type FormEvent } from 'react';
import type { WebhookEndpoint } from '@svc/sdk';
import { useCatalog } from '../../api/catalog';
import { ErrorBox } from '../../components/error-box';

export interface EndpointFields {
  url: string;
  description: string | null;
  subscribedEvents: string[];
  rateLimit: number | null;
  headers: Record<string, string>;
  ordering: 'none' | 'subject';
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
  const [missing, setMissing] = useState(false);
  const [headers, setHeaders] = useState<HeaderRow[]>(() => Object.entries(initial?.headers ?? {}).map(([name, kept]) => ({ key: nextKey++, name, value: '', kept })));
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (events.length === 0) return setMissing(true);
    const form = new FormData(event.currentTarget);
    const rate = String(form.get('rateLimit') ?? '').trim();
    const description = String(form.get('description') ?? '').trim();
    onSubmit({
      url: String(form.get('url')).trim(),
      description: description || null,
      subscribedEvents: events,
      rateLimit: rate ? Number(rate) : null,
      headers: Object.fromEntries(headers.map((h) => [h.name.trim().toLowerCase(), h.value || (h.kept ?? '')])),
      ordering: form.get('ordering') === 'subject' ? 'subject' : 'none',
    });
  };
  return (
    <form onSubmit={submit} className="endpoint-form">
      <label>
        URL
        <input name="url" type="url" required maxLength={2048} defaultValue={initial?.url} placeholder="https://example.com/webhooks" />
        <small>Where deliveries are POSTed, signed per Standard Webhooks. https:// only (http:// too where the service allows local targets).</small>
      </label>
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
      <ErrorBox error={error} />
      <button type="submit" aria-busy={running} disabled={running}>
        {submitLabel}
      </button>
    </form>
  );
}
