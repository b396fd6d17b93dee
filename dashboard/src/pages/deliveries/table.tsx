import type { WebhookDelivery } from '@svc/sdk';
import { Link } from 'wouter';
import type { Paged } from '../../api/hooks';
import { ErrorBox } from '../../components/error-box';
import { Badge, Time } from '../../components/format';
import { Pager } from '../../components/pager';
import { TableWrap } from '../../components/table-wrap';

/** A page of deliveries with its pager; `empty` is shown when the first page has none. */
export function DeliveryTable({ list, empty, showEndpoint = true }: { list: Paged<WebhookDelivery>; empty: React.ReactNode; showEndpoint?: boolean }) {
  const rows = list.data?.data;
  return (
    <>
      <ErrorBox error={list.error} retry={list.reload} />
      {rows && rows.length === 0 && list.pageNumber === 1 ? empty : null}
      {rows && rows.length > 0 ? (
        <TableWrap label="Deliveries">
          <table className="striped cards" data-testid="deliveries">
            <thead>
              <tr>
                <th scope="col">Delivery</th>
                <th scope="col">Event type</th>
                {showEndpoint ? <th scope="col">Endpoint</th> : null}
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
                    <Link href={`/deliveries/${d.id}`}>
                      <code>{d.id}</code>
                    </Link>
                    {d.replayOf ? (
                      <>
                        <br />
                        <small className="muted">replay</small>
                      </>
                    ) : null}
                  </td>
                  <td data-label="Event type">{d.eventType === 'webhook.ping' ? d.eventType : <Link href={`/events/${d.eventId}`}>{d.eventType}</Link>}</td>
                  {showEndpoint ? (
                    <td data-label="Endpoint">
                      <Link href={`/endpoints/${d.endpointId}`}>
                        <code>{d.endpointId}</code>
                      </Link>
                    </td>
                  ) : null}
                  <td data-label="Status">
                    <Badge value={d.status} />
                  </td>
                  <td data-label="Attempts">{d.attempt}</td>
                  <td data-label="Response">
                    {d.responseStatus ?? <span className="muted">—</span>}
                    {d.responseTimeMs !== null ? <small className="muted"> · {d.responseTimeMs} ms</small> : null}
                    {d.error ? (
                      <>
                        <br />
                        <small className="muted">{d.error}</small>
                      </>
                    ) : null}
                  </td>
                  <td data-label="Created">
                    <Time value={d.createdAt} />
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
