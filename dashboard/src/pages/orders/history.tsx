import type { Event } from '@svc/sdk';
import { Link } from 'wouter';
import { useApp } from '../../api/app-state';
import { usePaged } from '../../api/hooks';
import { ErrorBox } from '../../components/error-box';
import { Badge, Time } from '../../components/format';
import { Pager } from '../../components/pager';
import { STATUS_OF_EVENT } from './states';

/**
 * An order's history: its order.* events, newest first (GET /v1/events?subjectType=order&subjectId=...),
 * each with the status it moved the order to. `refresh` changes when the order does.
 */
export function StatusHistory({ orderId, refresh }: { orderId: string; refresh: string }) {
  const { client } = useApp();
  const list = usePaged<Event>(client, () => client.GET('/v1/events', { params: { query: { subjectType: 'order', subjectId: orderId, limit: 20 } } }), [orderId, refresh]);
  const events = list.data?.data ?? [];
  return (
    <>
      <h2>Status history</h2>
      <ErrorBox error={list.error} retry={list.reload} />
      {list.data && events.length === 0 ? <p className="muted">No event of this order is left in the log (events older than the retention period are deleted).</p> : null}
      {events.length > 0 ? (
        <ol className="timeline" data-testid="status-history" reversed>
          {events.map((event) => {
            const status = STATUS_OF_EVENT[event.type];
            return (
              <li key={event.id}>
                <Time value={event.created} /> <code>{event.type}</code> {status ? <Badge value={status} /> : <small className="muted">metadata or customer e-mail changed</small>}{' '}
                <Link href={`/events/${event.id}`} aria-label={`Event ${event.id}`}>
                  <small>
                    <code>{event.id}</code>
                  </small>
                </Link>
              </li>
            );
          })}
        </ol>
      ) : null}
      {list.loading && !list.data ? <p aria-busy="true">Loading…</p> : null}
      <Pager list={list} label="Status history" />
    </>
  );
}
