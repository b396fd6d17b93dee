import { useState, type FormEvent } from 'react';
import type { ResponseData } from '@svc/sdk';
import { useApp } from '../../api/app-state';
import { useAction, usePaged } from '../../api/hooks';
import { ConfirmButton } from '../../components/confirm';
import { Empty } from '../../components/empty';
import { ErrorBox } from '../../components/error-box';
import { Badge, Time } from '../../components/format';
import { Pager } from '../../components/pager';
import { SecretOnce } from '../../components/secret-once';
import { TableWrap } from '../../components/table-wrap';

type ApiKey = ResponseData<'/v1/workspaces/{workspaceId}/api-keys', 'get'>['data'][number];

/** The workspace's API keys: issue one (shown once), revoke one (effective at once). Owners and admins only. */
export function ApiKeys() {
  const { client, workspace, can } = useApp();
  const workspaceId = workspace!.id;
  const path = { params: { path: { workspaceId } } };
  const list = usePaged<ApiKey>(client, () => client.GET('/v1/workspaces/{workspaceId}/api-keys', { params: { path: { workspaceId }, query: { limit: 20 } } }), [workspaceId]);
  const [issued, setIssued] = useState<{ name: string; key: string } | null>(null);
  const create = useAction(async (name: string, test: boolean) => {
    const created = await client.POST('/v1/workspaces/{workspaceId}/api-keys', { ...path, body: { name, test } });
    setIssued({ name: created.name, key: created.key });
    list.reload();
  });
  const revoke = useAction(async (keyId: string) => {
    await client.DELETE('/v1/workspaces/{workspaceId}/api-keys/{keyId}', { params: { path: { workspaceId, keyId } } });
    list.reload();
  });

  if (!can('workspace:api_keys:manage')) {
    return (
      <article className="empty">
        <h1>API keys</h1>
        <p>Only an owner or admin of this workspace manages its API keys.</p>
      </article>
    );
  }

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    await create.run(String(form.get('name')).trim(), form.get('test') === 'on');
    event.currentTarget?.reset?.();
  };

  return (
    <section>
      <h1>API keys</h1>
      <p>An API key lets a program act in this workspace (read and write everything but API keys). Keep it on your server, never in a browser or an app.</p>
      {issued ? (
        <SecretOnce label={`API key "${issued.name}"`} value={issued.key} onDone={() => setIssued(null)}>
          <p>
            Send it as <code>Authorization: Bearer …</code>.
          </p>
        </SecretOnce>
      ) : (
        <form onSubmit={submit} className="inline-form" aria-label="New API key">
          <label>
            Name
            <input name="name" required maxLength={100} placeholder="e.g. Checkout server" />
          </label>
          <label className="check">
            <input type="checkbox" name="test" /> Test key (<code>svc_sk_test_</code>)
          </label>
          <button type="submit" aria-busy={create.running} disabled={create.running}>
            Create API key
          </button>
        </form>
      )}
      <ErrorBox error={list.error ?? create.error ?? revoke.error} retry={list.error ? list.reload : undefined} />
      {list.data && list.data.data.length === 0 && list.pageNumber === 1 ? (
        <Empty title="No API keys yet">
          <p>Create one above for your first program; it is shown once, so copy it into your server's secrets right away.</p>
        </Empty>
      ) : null}
      {list.data && list.data.data.length > 0 ? (
        <TableWrap label="API keys">
          <table className="striped cards">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Starts with</th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((k) => (
                <tr key={k.id}>
                  <td data-label="Name">
                    {k.name} {k.test ? <small className="muted">(test)</small> : null}
                  </td>
                  <td data-label="Starts with">
                    <code>{k.prefix}…</code>
                  </td>
                  <td data-label="Status">{k.revokedAt ? <Badge value="revoked" /> : <Badge value="active" />}</td>
                  <td data-label="Created">
                    <Time value={k.createdAt} />
                  </td>
                  <td data-label="Actions">
                    {k.revokedAt ? (
                      <small className="muted">
                        revoked <Time value={k.revokedAt} />
                      </small>
                    ) : (
                      <ConfirmButton label="Revoke" name={`Revoke ${k.name}`} className="secondary outline small" title="Revoke this API key?" confirmLabel="Revoke" danger onConfirm={() => revoke.run(k.id)}>
                        <p>
                          Requests with <code>{k.prefix}…</code> are refused from now on (401). This cannot be undone.
                        </p>
                      </ConfirmButton>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
      {list.loading && !list.data ? <p aria-busy="true">Loading…</p> : null}
      <Pager list={list} label="API keys" />
    </section>
  );
}
