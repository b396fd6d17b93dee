import type { ResponseData } from '@svc/sdk';
import { Link } from 'wouter';
import { useApp } from '../../api/app-state';
import { useAction, usePaged } from '../../api/hooks';
import { Empty } from '../../components/empty';
import { ErrorBox } from '../../components/error-box';
import { Badge, Time } from '../../components/format';
import { Pager } from '../../components/pager';
import { PushDevices } from './devices';

type Notification = ResponseData<'/v1/notifications', 'get'>['data'][number];

/** The signed-in person's notifications, from every workspace; unread ones first in their mind, newest first on the page. */
export function Notifications() {
  const app = useApp();
  const { client, unread } = app;
  const list = usePaged<Notification>(client, () => client.GET('/v1/notifications', { params: { query: { limit: 20 } } }), []);
  const read = useAction(async (id: string) => {
    await client.POST('/v1/notifications/{notificationId}/read', { params: { path: { notificationId: id } } });
    list.reload();
    unread.refresh();
  });
  const workspaceName = (id: string) => app.organizationOf(id)?.workspaces?.find((w) => w.id === id)?.name ?? id;

  return (
    <section>
      <h1>Notifications</h1>
      <p>
        {unread.count === 0 ? 'Nothing unread.' : `${unread.count}${unread.more ? '+' : ''} unread.`}
      </p>
      <ErrorBox error={list.error ?? read.error} retry={list.error ? list.reload : undefined} />
      {list.data && list.data.data.length === 0 && list.pageNumber === 1 ? (
        <Empty title="No notifications">
          <p>You are told here when something needs you, such as an endpoint disabled after 5 failed deliveries in a row.</p>
        </Empty>
      ) : null}
      {list.data?.data.map((n) => (
        <article key={n.id} className={n.readAt ? 'notification read' : 'notification unread'} data-testid="notification">
          <header>
            {n.readAt ? null : <Badge value="unread" />} <strong>{n.type}</strong> <small className="muted">in {workspaceName(n.workspaceId)}</small>
          </header>
          <p>{n.message}</p>
          <footer>
            <Time value={n.createdAt} />
            {n.subject?.type === 'webhook_endpoint' && n.workspaceId === app.workspace?.id ? (
              <>
                {' '}
                · <Link href={`/endpoints/${n.subject.id}`}>Open the endpoint</Link>
              </>
            ) : null}
            {n.type === 'webhook.endpoint.digest' && n.workspaceId === app.workspace?.id ? (
              <>
                {' '}
                · <Link href="/endpoints">Open the endpoints</Link>
              </>
            ) : null}
            {n.readAt ? null : (
              <button type="button" className="secondary outline small" onClick={() => void read.run(n.id)}>
                Mark as read
              </button>
            )}
          </footer>
        </article>
      ))}
      {list.loading && !list.data ? <p aria-busy="true">Loading…</p> : null}
      <Pager list={list} label="Notifications" />
      <PushDevices />
    </section>
  );
}
