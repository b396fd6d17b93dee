import { useState, type FormEvent } from 'react';
import type { WebhookEndpoint } from '@svc/sdk';
import { useApp } from '../../api/app-state';
import { useCatalog } from '../../api/catalog';
import { useAction } from '../../api/hooks';
import { trigger, TRIGGERABLE, TRIGGER_PERMISSIONS, type Made } from '../../api/trigger';
import { ErrorBox } from '../../components/error-box';
import { IdLink } from '../../components/id-link';

/** Whether an endpoint's subscriptions (exact types, or prefix patterns such as `order.*`) take `type`. */
function takes(subscribed: string[], type: string): boolean {
  return subscribed.some((entry) => entry === type || (entry.endsWith('.*') && type.startsWith(entry.slice(0, -1))));
}

/**
 * "Trigger an event": a real change of a chosen type, made through the API as the signed-in person,
 * so that this endpoint receives that event (and the events of the sample records it needs first).
 * Offered for the types the endpoint subscribes to and the person may cause.
 */
export function TriggerPanel({ endpoint, onTriggered }: { endpoint: WebhookEndpoint; onTriggered(): void }) {
  const { client, can } = useApp();
  const catalog = useCatalog();
  const [made, setMade] = useState<Made[] | null>(null);
  const types = (catalog.data ?? [])
    .map((t) => t.type)
    .filter((type) => TRIGGERABLE.includes(type) && takes(endpoint.subscribedEvents, type) && can(TRIGGER_PERMISSIONS[type.split('.')[0]]));
  const action = useAction(async (type: string) => {
    const list: Made[] = [];
    setMade(null);
    try {
      await trigger(client, type, list);
    } finally {
      // Refused half-way or not, what was made is shown, and the deliveries below are asked again.
      setMade(list);
      onTriggered();
    }
  });
  if (types.length === 0) return null;

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    void action.run(String(new FormData(event.currentTarget).get('type')));
  };
  return (
    <section aria-labelledby="trigger-title" data-testid="trigger">
      <h2 id="trigger-title">Trigger an event</h2>
      <p>
        Makes a real change in this workspace (a sample product or order, marked <code>source: dashboard trigger</code> in its metadata), so that this
        endpoint receives an event of the chosen type. An order needs a product first, and a refund a payment: their events are sent too.
      </p>
      <form className="inline-form" onSubmit={submit} aria-label="Trigger an event">
        <label>
          Event type
          <select name="type" defaultValue={types[0]}>
            {types.map((type) => (
              <option key={type} value={type}>
                {type}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" disabled={!endpoint.active || action.running} aria-busy={action.running}>
          Trigger
        </button>
      </form>
      {endpoint.active ? null : <p className="muted">Re-enable the endpoint first: while it is not active, its deliveries are recorded as disabled and not sent.</p>}
      <ErrorBox error={action.error} />
      {made && made.length > 0 ? (
        <div role="status" data-testid="triggered">
          <p>Made, in this order (the deliveries below follow):</p>
          <ol>
            {made.map((m, i) => (
              <li key={i}>
                <code>{m.type}</code> <IdLink id={m.subjectId} />
              </li>
            ))}
          </ol>
        </div>
      ) : null}
    </section>
  );
}
