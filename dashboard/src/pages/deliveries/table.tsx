import type { WebhookDelivery } from '@svc/sdk';
import { Link } from 'wouter';
import type { Paged } from '../../api/hooks';
import { ErrorBox } from '../../components/error-box';
import { Badge, Time } from '../../components/format';
import { Pager } from '../../components/pager';
import { TableWrap } from '../../components/table-wrap';

/** An endpoint's URL as a person tells it apart: host and path, without the scheme. */
const shortUrl = (url: string) => url.replace(/^[a-z]+:\/\//, '');

/**
 * A page of deliveries with its pager; `empty` is shown when the first page has none. `endpoints`
 * names each endpoint by its URL (an id alone says nothing); one row is one line at a laptop's width.
 */
export function DeliveryTable({
  list,
  empty,
  endpoints,
}: {
  list: Paged<WebhookDelivery>;
  empty: React.ReactNode;
  /** The URL of each endpoint by id; without it (an endpoint's own page) the column is left out. */
  endpoints?: Record<string, string>;
}) {
  const rows = list.data?.data;
  return (
    <>
      <ErrorBox error={list.error} retry={list.reload} />
      {rows && rows.length === 0 && list.pageNumber === 1 ? empty : null}
      {rows && rows.length > 0 ? (
        <TableWrap label="Deliveries">
          <table className="striped cards deliveries" data-testid="deliveries">
            <thead>
              <tr>
                <th scope="col">Delivery</th>
                <th scope="col">Event type</th>
                {endpoints ? <th scope="col">Endpoint</th> : null}
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Response</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((d) => (
                <tr key={d.id}>
                  <td data-label="Delivery">
                    <Link href={`/deliveries/${d.id}`} className="id" title={d.id}>
                      <code>{d.id}</code>
                    </Link>
                  </td>
                  <td data-label="Event type">
                    {/* A replay's eventId is synthetic, not in the log: it points at the delivery it copies instead. */}
                    {d.replayOf ? (
                      <>
                        {d.eventType}{' '}
                        <small className="muted">
                          (<Link href={`/deliveries/${d.replayOf}`}>replay</Link>)
                        </small>
                      </>
                    ) : d.eventType === 'webhook.ping' ? (
                      d.eventType
                    ) : (
                      <Link href={`/events/${d.eventId}`}>{d.eventType}</Link>
                    )}
                  </td>
                  {endpoints ? (
                    <td data-label="Endpoint" className="clip">
                      <Link href={`/endpoints/${d.endpointId}`} title={endpoints[d.endpointId] ?? d.endpointId}>
                        {endpoints[d.endpointId] ? shortUrl(endpoints[d.endpointId]) : <code>{d.endpointId}</code>}
                      </Link>
                    </td>
                  ) : null}
                  <td data-label="Status">
                    <Badge value={d.status} />
                  </td>
                  <td data-label="Attempts">{d.attempt}</td>
                  <td data-label="Response" className="clip" title={d.error ?? undefined}>
                    {d.responseStatus ?? <span className="muted">—</span>}
                    {d.responseTimeMs !== null ? <small className="muted"> · {d.responseTimeMs} ms</small> : null}
                    {d.error ? <small className="muted"> · {d.error}</small> : null}
                  </td>
                  <td data-label="Created">
                    <Time value={d.createdAt} short={isToday(d.createdAt)} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
      {list.loading && !list.data ? <p aria-busy="true">Loading…</p> : null}
      <Pager list={list} label="Deliveries" />
    </>
  );
}

/** Today's rows show the time of day only (the date is in the title), which keeps the column narrow. */
function isToday(iso: string): boolean {
  return new Date(iso).toDateString() === new Date().toDateString();
}
