import type { WebhookDelivery } from '@svc/sdk';
import { Link, useParams } from 'wouter';
import { useApp } from '../../api/app-state';
import { useLoad, usePaged } from '../../api/hooks';
import { Empty } from '../../components/empty';
import { ErrorBox } from '../../components/error-box';
import { Time } from '../../components/format';
import { IdLink } from '../../components/id-link';
import { DeliveryTable } from '../deliveries/table';

/** One event: its body as every endpoint receives it, and its deliveries. */
export function EventDetail() {
  const { eventId } = useParams<{ eventId: string }>();
  const { client, can } = useApp();
  const event = useLoad(() => client.GET('/v1/events/{eventId}', { params: { path: { eventId } } }), [eventId]);
  const e = event.data;

  return (
    <section>
      <nav aria-label="Breadcrumb">
        <ul>
          <li>
            <Link href="/events">Events</Link>
          </li>
          <li>
            <code>{eventId}</code>
          </li>
        </ul>
      </nav>
      <ErrorBox error={event.error} retry={event.reload} />
      {e ? (
        <>
          <h1>{e.type}</h1>
          <p>
            Created <Time value={e.created} />
            {'subject' in e ? (
              <>
                {' '}
                · subject <IdLink id={e.subject.id} /> ({e.subject.type})
              </>
            ) : null}
          </p>
          <h2>Body</h2>
          <pre className="code" tabIndex={0} aria-label="Event body">
            {JSON.stringify(e, null, 2)}
          </pre>
          {can('workspace:developer:read') ? <EventDeliveries type={e.type} created={e.created} /> : null}
        </>
      ) : event.loading ? (
        <p aria-busy="true">Loading…</p>
      ) : null}
    </section>
  );
}

/**
 * An event's deliveries are written in the same transaction as the event, with its creation time:
 * the deliveries of its type created at that very millisecond.
 */
function EventDeliveries({ type, created }: { type: WebhookDelivery['eventType']; created: string }) {
  const { client } = useApp();
  const list = usePaged<WebhookDelivery>(
    client,
    () => client.GET('/v1/webhooks/deliveries', { params: { query: { limit: 20, eventType: type as never, createdGte: created, createdLte: created } } }),
    [type, created],
  );
  return (
    <>
      <h2>Deliveries</h2>
      <DeliveryTable
        list={list}
        empty={
          <Empty title="No deliveries of this event">
            <p>
              No endpoint was subscribed to <code>{type}</code> when it happened. <Link href="/endpoints/new">Add an endpoint</Link> to receive the next
              ones.
            </p>
          </Empty>
        }
      />
    </>
  );
}
