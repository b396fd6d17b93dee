import type { Event } from '@svc/sdk';
import { Link, useParams } from 'wouter';
import { useApp } from '../../api/app-state';
import { SvcError } from '../../api/client';
import { useLoad, usePaged } from '../../api/hooks';
import { ErrorBox } from '../../components/error-box';
import { Badge, money, Time } from '../../components/format';
import { IdLink } from '../../components/id-link';
import { Pager } from '../../components/pager';

/** One product: what it is now, and its product.* events (which outlive it once it is deleted). */
export function ProductDetail() {
  const { productId } = useParams<{ productId: string }>();
  const { client } = useApp();
  const loaded = useLoad(() => client.GET('/v1/products/{productId}', { params: { path: { productId } } }), [productId]);
  const p = loaded.data;
  const deleted = loaded.error instanceof SvcError && loaded.error.status === 404;

  return (
    <section>
      <nav aria-label="Breadcrumb">
        <ul>
          <li>
            <Link href="/products">Products</Link>
          </li>
          <li>
            <code>{productId}</code>
          </li>
        </ul>
      </nav>
      {deleted ? (
        <>
          <h1>Product not found</h1>
          <p>There is no such product in this workspace, or it was deleted. The events below are what the log keeps of it.</p>
        </>
      ) : (
        <ErrorBox error={loaded.error} retry={loaded.reload} />
      )}
      {p ? (
        <>
          <header className="title-row">
            <h1>{p.name}</h1>
            <Badge value={p.active ? 'active' : 'inactive'} />
          </header>
          <dl className="facts">
            <dt>Price</dt>
            <dd>{p.price ? money(p.price.amount, p.price.currency) : <span className="muted">no price</span>}</dd>
            <dt>Description</dt>
            <dd>{p.description ?? <span className="muted">—</span>}</dd>
            <dt>Metadata</dt>
            <dd>{Object.keys(p.metadata).length ? <code>{JSON.stringify(p.metadata)}</code> : <span className="muted">—</span>}</dd>
            <dt>Created</dt>
            <dd>
              <Time value={p.createdAt} />
            </dd>
            <dt>Updated</dt>
            <dd>
              <Time value={p.updatedAt} />
            </dd>
          </dl>
        </>
      ) : loaded.loading ? (
        <p aria-busy="true">Loading…</p>
      ) : null}
      {p || deleted ? <ProductEvents productId={productId} refresh={p?.updatedAt} /> : null}
    </section>
  );
}

/** The product's events, newest first (GET /v1/events?subjectType=product&subjectId=...). */
function ProductEvents({ productId, refresh }: { productId: string; refresh: string | undefined }) {
  const { client } = useApp();
  const list = usePaged<Event>(client, () => client.GET('/v1/events', { params: { query: { subjectType: 'product', subjectId: productId, limit: 20 } } }), [productId, refresh]);
  const events = list.data?.data ?? [];
  return (
    <>
      <h2>Events</h2>
      <ErrorBox error={list.error} retry={list.reload} />
      {list.data && events.length === 0 ? <p className="muted">No event of this product is left in the log (events older than the retention period are deleted).</p> : null}
      {events.length > 0 ? (
        <ol className="timeline" data-testid="product-events" reversed>
          {events.map((event) => (
            <li key={event.id}>
              <Time value={event.created} /> <code>{event.type}</code> <IdLink id={event.id} label={`Event ${event.id}`} />
            </li>
          ))}
        </ol>
      ) : null}
      {list.loading && !list.data ? <p aria-busy="true">Loading…</p> : null}
      <Pager list={list} label="Product events" />
    </>
  );
}
