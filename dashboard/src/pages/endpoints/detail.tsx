import { useState } from 'react';
import type { WebhookDelivery } from '@svc/sdk';
import { Link, useLocation, useParams } from 'wouter';
import { useApp } from '../../api/app-state';
import { useAction, useLoad, usePaged } from '../../api/hooks';
import { useChangeCount, usePolling } from '../../api/polling';
import { ConfirmButton } from '../../components/confirm';
import { Empty } from '../../components/empty';
import { ErrorBox } from '../../components/error-box';
import { Badge, Time } from '../../components/format';
import { SecretOnce } from '../../components/secret-once';
import { DeliveryTable } from '../deliveries/table';
import { EndpointForm, type EndpointFields } from './form';
import { AlertsFact, FailingNotice } from './alerts';
import { DISABLED_REASONS, endpointState, STATE_HELP } from './health';
import { HealthPanel } from './health-panel';
import { RecoverPanel } from './recover';
import { TriggerPanel } from './trigger';

/** One endpoint: its state and settings, what a person can do with it, its recent deliveries. */
export function EndpointDetail() {
  const { endpointId } = useParams<{ endpointId: string }>();
  const { client, can } = useApp();
  const [, navigate] = useLocation();
  const path = { params: { path: { endpointId } } };
  const loaded = useLoad(() => client.GET('/v1/webhooks/endpoints/{endpointId}', path), [endpointId]);
  const deliveries = usePaged<WebhookDelivery>(client, () => client.GET('/v1/webhooks/deliveries', { params: { query: { endpointId, limit: 20 } } }), [endpointId]);
  const [editing, setEditing] = useState(false);
  const [rotated, setRotated] = useState<{ secret?: string; publicKey?: string; previousSecretExpiresAt: string } | null>(null);
  const [notice, setNotice] = useState<React.ReactNode>(null);
  const writable = can('workspace:developer:write');

  // New deliveries show up by themselves: the first page is looked at again after 5 seconds (2 while
  // one on it is pending), then less and less often while nothing on it changes (up to a minute),
  // and not while the tab is hidden. A later page stays as it is.
  const rows = deliveries.data?.data;
  const fingerprint = rows?.map((d) => `${d.id}/${d.status}/${d.attempt}`).join() ?? 'error';
  usePolling(deliveries.reload, deliveries.data ?? (deliveries.error || undefined), fingerprint, {
    startMs: rows?.some((d) => d.status === 'pending') ? 2000 : 5000,
    maxMs: 60_000,
    enabled: deliveries.pageNumber === 1,
  });
  const deliveryChanges = useChangeCount(rows ? fingerprint : undefined);

  const update = useAction(async (body: Partial<EndpointFields> & { active?: boolean; alerts?: boolean }) => {
    await client.PATCH('/v1/webhooks/endpoints/{endpointId}', { ...path, body: body as never });
    setEditing(false);
    loaded.reload();
  });
  const test = useAction(async () => {
    const sent = await client.POST('/v1/webhooks/endpoints/{endpointId}/send-test-event', path);
    setNotice(
      <>
        Test event queued as delivery <Link href={`/deliveries/${sent.deliveryId}`}>{sent.deliveryId}</Link>.
      </>,
    );
    deliveries.reload();
  });
  const rotate = useAction(async () => setRotated(await client.POST('/v1/webhooks/endpoints/{endpointId}/rotate-secret', path)));
  const remove = useAction(async () => {
    await client.DELETE('/v1/webhooks/endpoints/{endpointId}', path);
    navigate('/endpoints');
  });

  const ep = loaded.data;
  const state = ep ? endpointState(ep) : null;
  return (
    <section>
      <nav aria-label="Breadcrumb">
        <ul>
          <li>
            <Link href="/endpoints">Endpoints</Link>
          </li>
          <li>
            <code>{endpointId}</code>
          </li>
        </ul>
      </nav>
      <ErrorBox error={loaded.error} retry={loaded.reload} />
      {ep && state ? (
        <>
          <header className="title-row">
            <h1 className="url">{ep.url}</h1>
            <Badge value={state} />
            {ep.failing ? <Badge value="failing" /> : null}
          </header>
          {ep.failing ? <FailingNotice failing={ep.failing} /> : null}
          <p data-testid="endpoint-state">{STATE_HELP[state]}</p>
          {writable ? (
            <div className="actions">
              <button type="button" onClick={() => void test.run()} disabled={!ep.active || test.running} aria-busy={test.running} title={ep.active ? undefined : 'Re-enable the endpoint first'}>
                Send test event
              </button>
              {ep.active ? (
                <button type="button" className="secondary" onClick={() => void update.run({ active: false })}>
                  Pause
                </button>
              ) : (
                <button type="button" onClick={() => void update.run({ active: true })}>
                  Re-enable
                </button>
              )}
              <button type="button" className="secondary outline" onClick={() => setEditing(!editing)} aria-expanded={editing}>
                Edit
              </button>
              <ConfirmButton label="Rotate secret" className="secondary outline" title="Rotate the signing secret?" confirmLabel="Rotate" onConfirm={() => rotate.run()}>
                <p>
                  {ep.signatureScheme === 'v1a'
                    ? 'A new key pair is made; its public key is shown on this page. The current key keeps signing beside it for 24 hours, while your receiver switches over.'
                    : 'A new secret is issued and shown once. The current one keeps signing beside it for 24 hours, while your receiver switches over.'}
                </p>
              </ConfirmButton>
              <ConfirmButton label="Delete" className="secondary outline" title="Delete this endpoint?" confirmLabel="Delete endpoint" danger onConfirm={() => remove.run()}>
                <p>Queued deliveries become disabled; the delivery history stays.</p>
              </ConfirmButton>
            </div>
          ) : null}
          {notice ? <p role="status">{notice}</p> : null}
          <ErrorBox error={test.error ?? update.error ?? rotate.error ?? remove.error} />
          {rotated?.publicKey ? (
            <p role="status" data-testid="rotated-public-key">
              New public key <code>{rotated.publicKey}</code>: the previous key keeps signing beside it until <Time value={rotated.previousSecretExpiresAt} />.
            </p>
          ) : rotated?.secret ? (
            <SecretOnce label="New signing secret" value={rotated.secret} onDone={() => setRotated(null)}>
              <p>
                The previous secret keeps signing until <Time value={rotated.previousSecretExpiresAt} />.
              </p>
            </SecretOnce>
          ) : null}
          {editing ? (
            <article>
              <h2>Edit endpoint</h2>
              <EndpointForm initial={ep} submitLabel="Save changes" onSubmit={(f) => void update.run(f)} error={update.error} running={update.running} />
            </article>
          ) : null}
          <dl className="facts">
            <dt>Description</dt>
            <dd>{ep.description ?? <span className="muted">—</span>}</dd>
            <dt>Events</dt>
            <dd>
              {ep.subscribedEvents.map((e) => (
                <code key={e} className="chip">
                  {e}
                </code>
              ))}
            </dd>
            <dt>Rate limit</dt>
            <dd>{ep.rateLimit === null ? 'none' : `${ep.rateLimit} deliveries per second`}</dd>
            <dt>Throttle</dt>
            <dd data-testid="endpoint-throttle">
              {ep.throttle ? (
                <>
                  slowed down to {ep.throttle.concurrency} {ep.throttle.concurrency === 1 ? 'attempt' : 'attempts'} at a time since <Time value={ep.throttle.since} />: it
                  answered 429, 502, 503 or 504, or timed out; each other answer gives it one more
                </>
              ) : (
                <span className="muted">none</span>
              )}
            </dd>
            <dt>Extra headers</dt>
            <dd data-testid="endpoint-headers">
              {Object.keys(ep.headers).length ? (
                <ul className="plain">
                  {/* Values are not shown, to writers either: they are often credentials. */}
                  {Object.keys(ep.headers).map((name) => (
                    <li key={name}>
                      <code>{name}</code>: <span className="muted">[redacted]</span>
                    </li>
                  ))}
                </ul>
              ) : (
                <span className="muted">none</span>
              )}
            </dd>
            <dt>Ordering</dt>
            <dd data-testid="endpoint-ordering">
              {ep.ordering === 'subject' ? "by subject: one subject's deliveries are sent one at a time, oldest first (a failing one holds back the later ones of its subject)" : 'none: deliveries are independent'}
            </dd>
            <dt>Signature</dt>
            <dd data-testid="endpoint-signature">
              {ep.signatureScheme === 'v1a' ? (
                <>
                  v1a (ed25519), public key <code className="secret">{ep.publicKey}</code>
                </>
              ) : (
                'v1 (HMAC-SHA256 with the signing secret)'
              )}
            </dd>
            {ep.exchange !== null || ep.routingKey !== null ? (
              <>
                <dt>Exchange, routing key</dt>
                <dd data-testid="endpoint-route">
                  <code>{ep.exchange ?? 'amq.topic'}</code>, <code>{ep.routingKey ?? 'the event type'}</code>
                </dd>
              </>
            ) : null}
            {ep.subject !== null ? (
              <>
                <dt>Subject</dt>
                <dd data-testid="endpoint-route">
                  <code>{ep.subject}</code>
                </dd>
              </>
            ) : null}
            <dt>Trace context</dt>
            <dd data-testid="endpoint-propagate-trace">{ep.propagateTrace ? 'sent: each request carries a traceparent header while tracing is on' : 'not sent'}</dd>
            <AlertsFact endpoint={ep} writable={writable} busy={update.running} onChange={(alerts) => void update.run({ alerts })} />
            <dt>Disabled reason</dt>
            <dd>{ep.disabledReason ? DISABLED_REASONS[ep.disabledReason] : <span className="muted">—</span>}</dd>
            <dt>Created</dt>
            <dd>
              <Time value={ep.createdAt} />
            </dd>
            <dt>Updated</dt>
            <dd>
              <Time value={ep.updatedAt} />
            </dd>
          </dl>
          <TriggerPanel endpoint={ep} onTriggered={deliveries.reload} />
          {/* Right under Trigger and Send test event, where their deliveries are looked for; charts and recovery follow. */}
          <section aria-labelledby="endpoint-deliveries" data-testid="endpoint-deliveries">
            <h2 id="endpoint-deliveries">Deliveries</h2>
            <button type="button" className="secondary outline small" onClick={deliveries.reload}>
              Refresh
            </button>
            <DeliveryTable
              list={deliveries}
              empty={
                <Empty title="No deliveries to this endpoint yet">
                  <p>
                    {ep.active ? 'Send it a test event or trigger an event above, or' : 'Re-enable it, then'} create a product: each event it subscribes
                    to becomes a delivery here.
                  </p>
                </Empty>
              }
            />
          </section>
          {/* Asked again when a delivery on the first page changes (a new one, another attempt, an outcome). */}
          <HealthPanel endpointId={endpointId} refresh={deliveryChanges} />
          <RecoverPanel endpointId={endpointId} writable={writable} onRecovered={deliveries.reload} />
        </>
      ) : loaded.loading ? (
        <p aria-busy="true">Loading…</p>
      ) : null}
    </section>
  );
}
