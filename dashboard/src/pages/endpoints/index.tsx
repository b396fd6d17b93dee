import type { WebhookEndpoint } from '@svc/sdk';
import { Link } from 'wouter';
import { useApp } from '../../api/app-state';
import { usePaged } from '../../api/hooks';
import { Empty } from '../../components/empty';
import { ErrorBox } from '../../components/error-box';
import { Badge } from '../../components/format';
import { Pager } from '../../components/pager';
import { FailingLine } from './alerts';
import { endpointState } from './health';
import { StatsLine } from './stats';
import { TableWrap } from '../../components/table-wrap';

/** Webhook endpoints with their state and health at a glance. */
export function Endpoints() {
  const { client, can } = useApp();
  // Each endpoint's health comes with the list (expand=stats): one request for the page.
  const list = usePaged<WebhookEndpoint>(client, () => client.GET('/v1/webhooks/endpoints', { params: { query: { limit: 20, expand: ['stats'] } } }), []);
  const writable = can('workspace:developer:write');
  return (
    <section>
      <header className="title-row">
        <h1>Endpoints</h1>
        {writable ? (
          <Link href="/endpoints/new" role="button">
            New endpoint
          </Link>
        ) : null}
      </header>
      <ErrorBox error={list.error} retry={list.reload} />
      {list.data && list.data.data.length === 0 && list.pageNumber === 1 ? (
        <Empty title="No webhook endpoints yet">
          <p>
            An endpoint is a URL of yours that receives this workspace's events, signed so that you can trust them.{' '}
            {writable ? <Link href="/endpoints/new">Add your first endpoint</Link> : 'An owner or admin can add one'}, then send it a test event.
          </p>
        </Empty>
      ) : null}
      {list.data && list.data.data.length > 0 ? (
        <TableWrap label="Endpoints">
          <table className="striped cards">
            <thead>
              <tr>
                <th scope="col">URL</th>
                <th scope="col">State</th>
                <th scope="col">Events</th>
                <th scope="col">Last 24 hours</th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((ep) => (
                <tr key={ep.id}>
                  <td data-label="URL">
                    <Link href={`/endpoints/${ep.id}`}>{ep.url}</Link>
                    {ep.description ? (
                      <>
                        <br />
                        <small className="muted">{ep.description}</small>
                      </>
                    ) : null}
                  </td>
                  <td data-label="State">
                    <Badge value={endpointState(ep)} />
                    {ep.failing ? (
                      <>
                        {' '}
                        <Badge value="failing" />
                        <br />
                        <FailingLine failing={ep.failing} />
                      </>
                    ) : null}
                  </td>
                  <td data-label="Events">
                    {ep.subscribedEvents.map((e) => (
                      <code key={e} className="chip">
                        {e}
                      </code>
                    ))}
                  </td>
                  <td data-label="Last 24 hours">{ep.stats ? <StatsLine stats={ep.stats} /> : <span className="muted">unknown</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
      {list.loading && !list.data ? <p aria-busy="true">Loading…</p> : null}
      <Pager list={list} label="Endpoints" />
    </section>
  );
}
