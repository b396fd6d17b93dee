import type { Event, EventType } from '@svc/sdk';
import { Link } from 'wouter';
import { useApp } from '../../api/app-state';
import { inEventLog, useCatalog } from '../../api/catalog';
import { formFilters, useFilters } from '../../api/filters';
import { usePaged } from '../../api/hooks';
import { Empty } from '../../components/empty';
import { ErrorBox } from '../../components/error-box';
import { Time } from '../../components/format';
import { IdLink } from '../../components/id-link';
import { Pager } from '../../components/pager';
import { TableWrap } from '../../components/table-wrap';

const FILTERS = ['type', 'subjectType', 'subjectId'] as const;

/** The workspace's event log, newest first, with its filters. */
export function Events() {
  const { client } = useApp();
  const catalog = useCatalog();
  const [filters, setFilters] = useFilters(FILTERS);
  const list = usePaged<Event>(
    client,
    () =>
      client.GET('/v1/events', {
        params: { query: { limit: 20, type: filters.type as EventType | undefined, subjectType: filters.subjectType, subjectId: filters.subjectId } },
      }),
    [filters],
  );
  const filtered = Object.keys(filters).length > 0;

  return (
    <section>
      <h1>Events</h1>
      <form
        className="filters"
        aria-label="Event filters"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters(formFilters(e.currentTarget, FILTERS));
        }}
      >
        <label>
          Type
          <select name="type" defaultValue={filters.type ?? ''}>
            <option value="">Any type</option>
            {(catalog.data ?? []).filter((t) => inEventLog(t.type)).map((t) => (
              <option key={t.type} value={t.type}>
                {t.type}
              </option>
            ))}
          </select>
        </label>
        <label>
          Subject type
          <input name="subjectType" defaultValue={filters.subjectType} placeholder="product" />
        </label>
        <label>
          Subject id
          <input name="subjectId" defaultValue={filters.subjectId} placeholder="prd_..." />
        </label>
        <button type="submit">Filter</button>
      </form>
      <ErrorBox error={list.error} retry={list.reload} />
      {list.data && list.data.data.length === 0 && list.pageNumber === 1 ? (
        <Empty title={filtered ? 'No event matches these filters' : 'No events yet'}>
          {filtered ? (
            <p>Clear a filter to see more.</p>
          ) : (
            <p>
              Every change to a resource is an event: create a product (on the Products page or with <code>POST /v1/products</code>) and it shows up
              here, then add an endpoint to receive events as webhooks.
            </p>
          )}
        </Empty>
      ) : null}
      {list.data && list.data.data.length > 0 ? (
        <TableWrap label="Events">
          <table className="striped cards">
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Type</th>
                <th scope="col">Subject</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((event) => (
                <tr key={event.id}>
                  <td data-label="Event">
                    <Link href={`/events/${event.id}`}>
                      <code>{event.id}</code>
                    </Link>
                  </td>
                  <td data-label="Type">{event.type}</td>
                  <td data-label="Subject">{'subject' in event ? <IdLink id={event.subject.id} /> : <span className="muted">—</span>}</td>
                  <td data-label="Created">
                    <Time value={event.created} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
      {list.loading && !list.data ? <p aria-busy="true">Loading…</p> : null}
      <Pager list={list} label="Events" />
    </section>
  );
}
