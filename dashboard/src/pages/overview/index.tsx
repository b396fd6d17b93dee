import { Link } from 'wouter';
import { useApp } from '../../api/app-state';
import { useLoad } from '../../api/hooks';
import { ErrorBox } from '../../components/error-box';
import { Badge, Time } from '../../components/format';
import { endpointState } from '../endpoints/health';

/** The workspace at a glance: its endpoints' states, its latest events, and the first steps for a newcomer. */
export function Overview() {
  const { client, workspace, can } = useApp();
  const endpoints = useLoad(async () => (await client.GET('/v1/webhooks/endpoints', { params: { query: { limit: 100 } } })).data, [client]);
  const events = useLoad(async () => (await client.GET('/v1/events', { params: { query: { limit: 5 } } })).data, [client]);
  const states = (endpoints.data ?? []).map(endpointState);
  const count = (state: string) => states.filter((s) => s === state).length;

  return (
    <section>
      <h1>{workspace!.name}</h1>
      <p>
        Your role here: <strong>{workspace!.role}</strong>
        {can('workspace:developer:write') ? '' : ' (read only)'}.
      </p>
      <ErrorBox error={endpoints.error ?? events.error} />
      <div className="grid cards">
        <article>
          <h2>Endpoints</h2>
          {endpoints.data ? (
            <p data-testid="endpoint-states">
              <Badge value="active" /> {count('active')} <Badge value="paused" /> {count('paused')} <Badge value="auto-disabled" /> {count('auto-disabled')}
            </p>
          ) : endpoints.loading ? (
            <p aria-busy="true">Loading…</p>
          ) : null}
          <Link href="/endpoints">All endpoints</Link>
        </article>
        <article>
          <h2>Latest events</h2>
          {events.data && events.data.length > 0 ? (
            <ul>
              {events.data.map((e) => (
                <li key={e.id}>
                  <Link href={`/events/${e.id}`}>{e.type}</Link> <small className="muted"><Time value={e.created} /></small>
                </li>
              ))}
            </ul>
          ) : events.data ? (
            <p className="muted">None yet.</p>
          ) : events.loading ? (
            <p aria-busy="true">Loading…</p>
          ) : null}
          <Link href="/events">All events</Link>
        </article>
      </div>
      {endpoints.data && endpoints.data.length === 0 ? (
        <article className="empty">
          <h2>Getting started</h2>
          <ol>
            <li>
              Run a receiver of your own (<code>sdk/examples/receiver.mjs</code> is one) and <Link href="/endpoints/new">add it as an endpoint</Link>.
            </li>
            <li>Send it a test event from the endpoint's page, and watch the delivery arrive.</li>
            <li>
              Create a product on the <Link href="/products">Products</Link> page: the <code>product.created</code> event is delivered the same way.
            </li>
          </ol>
        </article>
      ) : null}
    </section>
  );
}
