import { useState, type FormEvent } from 'react';
import type { Product } from '@svc/sdk';
import { Link } from 'wouter';
import { useApp } from '../../api/app-state';
import { useAction, usePaged } from '../../api/hooks';
import { ConfirmButton } from '../../components/confirm';
import { Empty } from '../../components/empty';
import { ErrorBox } from '../../components/error-box';
import { Badge, currencyDigits, money, Time, toMinorUnits } from '../../components/format';
import { Pager } from '../../components/pager';
import { TableWrap } from '../../components/table-wrap';

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
        <TableWrap label="Products">
          <table className="striped cards">
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
                  <td data-label="Name">
                    <Link href={`/products/${p.id}`}>{p.name}</Link>
                    <br />
                    <small className="muted">
                      <code>{p.id}</code>
                    </small>
                  </td>
                  <td data-label="Price">{p.price ? money(p.price.amount, p.price.currency) : <span className="muted">no price</span>}</td>
                  <td data-label="Status">
                    <Badge value={p.active ? 'active' : 'inactive'} />
                  </td>
                  <td data-label="Created">
                    <Time value={p.createdAt} />
                  </td>
                  {writable ? (
                    <td data-label="Actions" className="actions">
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
        </TableWrap>
      ) : null}
      {list.loading && !list.data ? <p aria-busy="true">Loading…</p> : null}
      <Pager list={list} label="Products" />
    </section>
  );
}

function CreateProduct({ onCreated }: { onCreated(): void }) {
  const { client } = useApp();
  const [open, setOpen] = useState(false);
  const [amount, setAmount] = useState('');
  const [currency, setCurrency] = useState('EUR');
  const [invalid, setInvalid] = useState<string | null>(null);
  const create = useAction((body: { name: string; price?: { amount: number; currency: string } }) => client.POST('/v1/products', { body }));
  const code = currency.trim().toUpperCase();
  const digits = currencyDigits(code);
  // Typed in major units, as on a price tag; the API takes minor units (cents).
  const minor = amount.trim() ? toMinorUnits(amount, code) : null;

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = event.currentTarget;
    if (amount.trim() && minor === null) {
      setInvalid(`Type the price in ${code} with at most ${digits} decimal${digits === 1 ? '' : 's'}, such as ${digits ? `25.${'5'.padEnd(digits, '0')}` : '25'}.`);
      return;
    }
    setInvalid(null);
    const body = { name: String(new FormData(form).get('name')), ...(minor !== null ? { price: { amount: minor, currency: code } } : {}) };
    if (await create.run(body)) {
      form.reset();
      setAmount('');
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
          <div>
            <label htmlFor="new-product-price">Price</label>
            <input id="new-product-price" name="amount" value={amount} onChange={(e) => (setAmount(e.target.value), setInvalid(null))} inputMode="decimal" autoComplete="off" placeholder={digits ? `25.${'0'.repeat(digits)}` : '25'} aria-describedby="price-help" aria-invalid={invalid ? true : undefined} />
            <small id="price-help" data-testid="price-preview" aria-live="polite">
              {minor !== null ? money(minor, code) : `In ${code}, up to ${digits} decimal${digits === 1 ? '' : 's'}; empty for no price.`}
            </small>
          </div>
          <label>
            Currency (ISO 4217)
            <input name="currency" value={currency} onChange={(e) => setCurrency(e.target.value)} maxLength={3} pattern="[A-Za-z]{3}" />
          </label>
        </div>
        {invalid ? <p className="error" role="alert">{invalid}</p> : null}
        <ErrorBox error={create.error} />
        <button type="submit" aria-busy={create.running} disabled={create.running}>
          Create product
        </button>
      </form>
    </details>
  );
}
