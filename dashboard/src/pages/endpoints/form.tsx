import { useState, type FormEvent } from 'react';
import type { WebhookEndpoint } from '@svc/sdk';
import { useCatalog } from '../../api/catalog';
import { ErrorBox } from '../../components/error-box';

export interface EndpointFields {
  url: string;
  description: string | null;
  subscribedEvents: string[];
  rateLimit: number | null;
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
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (events.length === 0) return setMissing(true);
    const form = new FormData(event.currentTarget);
    const rate = String(form.get('rateLimit') ?? '').trim();
    const description = String(form.get('description') ?? '').trim();
    onSubmit({ url: String(form.get('url')).trim(), description: description || null, subscribedEvents: events, rateLimit: rate ? Number(rate) : null });
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
      <ErrorBox error={error} />
      <button type="submit" aria-busy={running} disabled={running}>
        {submitLabel}
      </button>
    </form>
  );
}
