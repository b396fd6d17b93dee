import type { Order } from '@svc/sdk';
import { Link, useParams } from 'wouter';
import { useApp } from '../../api/app-state';
import { useAction, useLoad } from '../../api/hooks';
import { ConfirmButton } from '../../components/confirm';
import { ErrorBox } from '../../components/error-box';
import { Badge, money, Time } from '../../components/format';
import { IdLink } from '../../components/id-link';
import { TableWrap } from '../../components/table-wrap';
import { StatusHistory } from './history';
import { allowedActions, ORDER_ACTIONS, type OrderActionName } from './states';

const ACTION_PATHS = {
  pay: '/v1/orders/{orderId}/pay',
  fulfill: '/v1/orders/{orderId}/fulfill',
  cancel: '/v1/orders/{orderId}/cancel',
  refund: '/v1/orders/{orderId}/refund',
} as const;

/** One order: its lines, its status and the actions that status allows, and its history of events. */
export function OrderDetail() {
  const { orderId } = useParams<{ orderId: string }>();
  const { client, can } = useApp();
  const loaded = useLoad(() => client.GET('/v1/orders/{orderId}', { params: { path: { orderId } } }), [orderId]);
  const act = useAction(async (name: OrderActionName) => {
    try {
      await client.POST(ACTION_PATHS[name], { params: { path: { orderId } } });
    } finally {
      // Refused or not, the page shows the order as it is now (a 409 means someone moved it meanwhile).
      loaded.reload();
    }
  });
  const order = loaded.data;
  const writable = can('workspace:orders:write');

  return (
    <section>
      <nav aria-label="Breadcrumb">
        <ul>
          <li>
            <Link href="/orders">Orders</Link>
          </li>
          <li>
            <code>{orderId}</code>
          </li>
        </ul>
      </nav>
      <ErrorBox error={loaded.error} retry={loaded.reload} />
      {order ? (
        <>
          <header className="title-row">
            <h1>
              {money(order.amountTotal, order.currency)} <Badge value={order.status} />
            </h1>
            {writable ? <Actions order={order} run={(name) => void act.run(name)} running={act.running} /> : null}
          </header>
          <ErrorBox error={act.error} />
          <dl className="facts">
            <dt>Status</dt>
            <dd data-testid="order-status">{order.status}</dd>
            <dt>Customer</dt>
            <dd>{order.customerEmail ?? <span className="muted">—</span>}</dd>
            <dt>Created</dt>
            <dd>
              <Time value={order.createdAt} />
            </dd>
            {(['paidAt', 'fulfilledAt', 'canceledAt', 'refundedAt'] as const)
              .filter((field) => order[field])
              .map((field) => (
                <Fact key={field} label={field.replace('At', '').replace(/^./, (c) => c.toUpperCase())} value={order[field]} />
              ))}
            <dt>Metadata</dt>
            <dd>{Object.keys(order.metadata ?? {}).length ? <code>{JSON.stringify(order.metadata)}</code> : <span className="muted">—</span>}</dd>
          </dl>
          <h2>Line items</h2>
          <LineItems order={order} />
          <StatusHistory orderId={orderId} refresh={order.updatedAt} />
        </>
      ) : loaded.loading ? (
        <p aria-busy="true">Loading…</p>
      ) : null}
    </section>
  );
}

function Fact({ label, value }: { label: string; value: string | null }) {
  return (
    <>
      <dt>{label}</dt>
      <dd>
        <Time value={value} />
      </dd>
    </>
  );
}

/** The actions the order's status allows; cancel and refund (final) ask first. */
function Actions({ order, run, running }: { order: Order; run(name: OrderActionName): void; running: boolean }) {
  const allowed = allowedActions(order.status);
  if (allowed.length === 0) return <p className="muted">{order.status} is final: no action is left.</p>;
  return (
    <div className="actions">
      {allowed.map((name) => {
        const { label, confirm } = ORDER_ACTIONS[name];
        return confirm ? (
          <ConfirmButton key={name} label={label} className="secondary" title={`${label}?`} confirmLabel={label} danger disabled={running} onConfirm={() => run(name)}>
            <p>{confirm}</p>
          </ConfirmButton>
        ) : (
          <button key={name} type="button" onClick={() => run(name)} disabled={running} aria-busy={running}>
            {label}
          </button>
        );
      })}
    </div>
  );
}

function LineItems({ order }: { order: Order }) {
  const lines = order.lineItems ?? [];
  return (
    <TableWrap label="Line items">
      <table className="striped lines" data-testid="line-items">
        <thead>
          <tr>
            <th scope="col">Product</th>
            <th scope="col">Unit price</th>
            <th scope="col">Quantity</th>
            <th scope="col">Amount</th>
          </tr>
        </thead>
        <tbody>
          {lines.map((line, i) => (
            <tr key={i}>
              <td>
                {line.name}
                <br />
                <small>
                  <IdLink id={line.productId} />
                </small>
              </td>
              <td>{money(line.unitAmount, order.currency)}</td>
              <td>{line.quantity}</td>
              <td>{money(line.amount, order.currency)}</td>
            </tr>
          ))}
        </tbody>
        <tfoot>
          <tr>
            <th scope="row" colSpan={3}>
              Total
            </th>
            <td>{money(order.amountTotal, order.currency)}</td>
          </tr>
        </tfoot>
      </table>
    </TableWrap>
  );
}
