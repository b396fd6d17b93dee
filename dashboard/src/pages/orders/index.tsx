import type { Order } from '@svc/sdk';
import { Link } from 'wouter';
import { useApp } from '../../api/app-state';
import { formFilters, useFilters, withIsoRange } from '../../api/filters';
import { CreatedRangeFields } from '../../components/created-range';
import { usePaged } from '../../api/hooks';
import { Empty } from '../../components/empty';
import { ErrorBox } from '../../components/error-box';
import { Badge, money, Time } from '../../components/format';
import { Pager } from '../../components/pager';
import { ORDER_STATUSES, type OrderStatus } from './states';
import { TableWrap } from '../../components/table-wrap';

const FILTERS = ['status', 'createdGte', 'createdLte'] as const;

/** Orders of the workspace, newest first, with the status and creation-time filters of the API. */
export function Orders() {
  const { client } = useApp();
  const [filters, setFilters] = useFilters(FILTERS);
  const list = usePaged<Order>(
    client,
    () =>
      client.GET('/v1/orders', {
        params: {
          query: {
            limit: 20,
            expand: ['lineItems'],
            status: filters.status as OrderStatus | undefined,
            createdGte: filters.createdGte,
            createdLte: filters.createdLte,
          },
        },
      }),
    [filters],
  );
  const filtered = Object.keys(filters).length > 0;

  return (
    <section>
      <h1>Orders</h1>
      <form
        className="filters"
        aria-label="Order filters"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters(withIsoRange(formFilters(e.currentTarget, FILTERS)));
        }}
      >
        <label>
          Status
          <select name="status" defaultValue={filters.status ?? ''}>
            <option value="">Any status</option>
            {ORDER_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <CreatedRangeFields filters={filters} />
        <button type="submit">Filter</button>
      </form>
      <ErrorBox error={list.error} retry={list.reload} />
      {list.data && list.data.data.length === 0 && list.pageNumber === 1 ? (
        filtered ? (
          <Empty title="No order matches these filters">
            <p>Clear a filter to see more.</p>
          </Empty>
        ) : (
          <FirstOrder />
        )
      ) : null}
      {list.data && list.data.data.length > 0 ? (
        <TableWrap label="Orders">
          <table className="striped cards" data-testid="orders">
            <thead>
              <tr>
                <th scope="col">Order</th>
                <th scope="col">Status</th>
                <th scope="col">Total</th>
                <th scope="col">Items</th>
                <th scope="col">Customer</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((o) => (
                <tr key={o.id}>
                  <td data-label="Order">
                    <Link href={`/orders/${o.id}`}>
                      <code>{o.id}</code>
                    </Link>
                  </td>
                  <td data-label="Status">
                    <Badge value={o.status} />
                  </td>
                  <td data-label="Total">{money(o.amountTotal, o.currency)}</td>
                  <td data-label="Items">{o.lineItems ? o.lineItems.reduce((n, line) => n + line.quantity, 0) : <span className="muted">—</span>}</td>
                  <td data-label="Customer">{o.customerEmail ?? <span className="muted">—</span>}</td>
                  <td data-label="Created">
                    <Time value={o.createdAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
      {list.loading && !list.data ? <p aria-busy="true">Loading…</p> : null}
      <Pager list={list} label="Orders" />
    </section>
  );
}

/** The empty list, for a newcomer: how an order is made (by a program, with an API key). */
function FirstOrder() {
  const { can } = useApp();
  const curl = [
    `curl -X POST ${location.origin}/v1/orders \\`,
    `  -H "Authorization: Bearer $SVC_API_KEY" \\`,
    `  -H "Content-Type: application/json" \\`,
    `  -d '{"lineItems": [{"productId": "prd_...", "quantity": 2}], "customerEmail": "ada@example.com"}'`,
  ].join('\n');
  return (
    <Empty title="No orders yet">
      <p>
        Orders are placed by your programs through the API, with an API key of this workspace
        {can('workspace:api_keys:manage') ? (
          <>
            {' '}
            (<Link href="/api-keys">API keys</Link>)
          </>
        ) : null}
        . Each line names an
        active <Link href="/products">product</Link> with a price; its name and price are copied into the order:
      </p>
      <pre className="code" tabIndex={0} aria-label="Create an order with curl">
        {curl}
      </pre>
      <p>
        The order starts <Badge value="pending" />; it is then paid, fulfilled, canceled or refunded, here or with{' '}
        <code>POST /v1/orders/ord_.../pay</code> and the like. Each step is an <code>order.*</code> event your webhook endpoints can receive.
      </p>
    </Empty>
  );
}
