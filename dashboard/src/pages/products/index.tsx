import { useState, type FormEvent } from 'react';
import type { Product } from '@svc/sdk';
import { useApp } from '../../api/app-state';
import { useAction, usePaged } from '../../api/hooks';
import { ConfirmButton } from '../../components/confirm';
import { Empty } from '../../components/empty';
import { ErrorBox } from '../../components/error-box';
import { Badge, money, Time } from '../../components/format';
import { Pager } from '../../components/pager';

/** Products of the workspace: every change emits a product.* event to subscribed endpoints. */
export function Products() {
  const { client, can } = useApp();
  const list = usePaged<Product>(client, () => client.GET('/v1/products', { params: { query: { limit: 20 } } }), []);
  const writable = can('workspace:products:write');
  const remove = useAction((id: string) => client.DELETE('/v1/products/{productId}', { params: { path: { productId: id } } }).then(list.reload));
  const toggle = useAction((p: Product) =>
    client.PATCH('/v1/products/{productId}', { params: { path: { productId: p.id } }, body: { active: !p.active } }).then(list.reload),
  );

  return (
    <section>
      <h1>Products</h1>
      {writable ? <CreateProduct onCreated={list.reload} /> : null}
      <ErrorBox error={list.error ?? remove.error ?? toggle.error} retry={list.error ? list.reload : undefined} />
      {list.data && list.data.data.length === 0 && list.pageNumber === 1 ? (
        <Empty title="No products yet">
          <p>
            {writable ? 'Create one above' : 'An owner or admin can create one'}, or send <code>POST /v1/products</code> with an API key. Each change is an
            event (<code>product.created</code>, <code>product.updated</code>, <code>product.deleted</code>) that your webhook endpoints receive.
          </p>
        </Empty>
      ) : null}
      {list.data && list.data.data.length > 0 ? (
        <div className="table-wrap">
          <table className="striped">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Price</th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
                {writable ? <th scope="col">Actions</th> : null}
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((p) => (
                <tr key={p.id}>
                  <td>
                    {p.name}
                    <br />
                    <small className="muted">
                      <code>{p.id}</code>
                    </small>
                  </td>
                  <td>{p.price ? money(p.price.amount, p.price.currency) : <span className="muted">no price</span>}</td>
                  <td>
                    <Badge value={p.active ? 'active' : 'disabled'} />
                  </td>
                  <td>
                    <Time value={p.createdAt} />
                  </td>
                  {writable ? (
                    <td className="actions">
                      <button type="button" className="secondary outline small" onClick={() => void toggle.run(p)}>
                        {p.active ? 'Deactivate' : 'Activate'}
                      </button>
                      <ConfirmButton label="Delete" name={`Delete ${p.name}`} className="secondary outline small" title="Delete this product?" confirmLabel="Delete" danger onConfirm={() => remove.run(p.id)}>
                        <p>
                          <strong>{p.name}</strong> is deleted and a <code>product.deleted</code> event is sent. Its events stay readable.
                        </p>
                      </ConfirmButton>
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {list.loading && !list.data ? <p aria-busy="true">Loading…</p> : null}
      <Pager list={list} label="Products" />
    </section>
  );
}

function CreateProduct({ onCreated }: { onCreated(): void }) {
  const { client } = useApp();
  const [open, setOpen] = useState(false);
  const create = useAction((body: { name: string; price?: { amount: number; currency: string } }) => client.POST('/v1/products', { body }));

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const amount = String(form.get('amount') ?? '').trim();
    const currency = String(form.get('currency') ?? '').trim().toUpperCase();
    const body = { name: String(form.get('name')), ...(amount ? { price: { amount: Number(amount), currency } } : {}) };
    if (await create.run(body)) {
      (event.target as HTMLFormElement).reset();
      setOpen(false);
      onCreated();
    }
  };

  return (
    <details open={open} onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary role="button" className="outline">
        New product
      </summary>
      <form onSubmit={submit}>
        <label>
          Name
          <input name="name" required maxLength={200} />
        </label>
        <div className="grid">
          <label>
            Price in minor units (1500 = 15.00)
            <input name="amount" type="number" min={0} step={1} inputMode="numeric" />
          </label>
          <label>
            Currency (ISO 4217)
            <input name="currency" defaultValue="EUR" maxLength={3} pattern="[A-Za-z]{3}" />
          </label>
        </div>
        <ErrorBox error={create.error} />
        <button type="submit" aria-busy={create.running} disabled={create.running}>
          Create product
        </button>
      </form>
    </details>
  );
}
