import type { EventType, WebhookDelivery, WebhookEndpoint } from '@svc/sdk';
import { useMemo } from 'react';
import { Link } from 'wouter';
import { useApp } from '../../api/app-state';
import { useCatalog } from '../../api/catalog';
import { formFilters, useFilters, withIsoRange } from '../../api/filters';
import { CreatedRangeFields } from '../../components/created-range';
import { useLoad, usePaged } from '../../api/hooks';
import { Empty } from '../../components/empty';
import { DeliveryTable } from './table';

const FILTERS = ['endpointId', 'status', 'eventType', 'createdGte', 'createdLte'] as const;
const STATUSES = ['pending', 'success', 'failed', 'disabled'] as const;

/** The delivery log with every filter the API has. */
export function Deliveries() {
  const { client } = useApp();
  const catalog = useCatalog();
  const endpoints = useLoad(async () => (await client.GET('/v1/webhooks/endpoints', { params: { query: { limit: 100 } } })).data, [client]);
  const [filters, setFilters] = useFilters(FILTERS);
  const list = usePaged<WebhookDelivery>(
    client,
    () =>
      client.GET('/v1/webhooks/deliveries', {
        params: {
          query: {
            limit: 20,
            endpointId: filters.endpointId,
            status: filters.status as (typeof STATUSES)[number] | undefined,
            eventType: filters.eventType as EventType | undefined,
            createdGte: filters.createdGte,
            createdLte: filters.createdLte,
          },
        },
      }),
    [filters],
  );
  const filtered = Object.keys(filters).length > 0;
  const urls = useMemo(() => Object.fromEntries((endpoints.data ?? []).map((ep) => [ep.id, ep.url])), [endpoints.data]);

  return (
    <section>
      <h1>Deliveries</h1>
      <form
        className="filters"
        aria-label="Delivery filters"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters(withIsoRange(formFilters(e.currentTarget, FILTERS)));
        }}
      >
        <label>
          Endpoint
          <select name="endpointId" defaultValue={filters.endpointId ?? ''}>
            <option value="">Any endpoint</option>
            {(endpoints.data ?? []).map((ep: WebhookEndpoint) => (
              <option key={ep.id} value={ep.id}>
                {ep.url}
              </option>
            ))}
          </select>
        </label>
        <label>
          Status
          <select name="status" defaultValue={filters.status ?? ''}>
            <option value="">Any status</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Event type
          <select name="eventType" defaultValue={filters.eventType ?? ''}>
            <option value="">Any type</option>
            {(catalog.data ?? []).map((t) => (
              <option key={t.type} value={t.type}>
                {t.type}
              </option>
            ))}
          </select>
        </label>
        <CreatedRangeFields filters={filters} />
        <button type="submit">Filter</button>
      </form>
      <DeliveryTable
        list={list}
        endpoints={urls}
        empty={
          filtered ? (
            <Empty title="No delivery matches these filters">
              <p>Clear a filter to see more.</p>
            </Empty>
          ) : (
            <Empty title="No deliveries yet">
              <p>
                A delivery is one event sent to one endpoint. <Link href="/endpoints/new">Add an endpoint</Link>, then send it a test event or create a
                product: each delivery, its attempts and the receiver's answers show up here.
              </p>
            </Empty>
          )
        }
      />
    </section>
  );
}
