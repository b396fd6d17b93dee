import type { ResponseData } from '@svc/sdk';
import { Link, useLocation, useParams } from 'wouter';
import { useApp } from '../../api/app-state';
import { useAction, useLoad } from '../../api/hooks';
import { usePolling } from '../../api/polling';
import { ErrorBox } from '../../components/error-box';
import { Badge, Time } from '../../components/format';
import { IdLink } from '../../components/id-link';
import { AttemptsTimeline } from './attempts';
import { Headers } from './headers';

type Delivery = ResponseData<'/v1/webhooks/deliveries/{deliveryId}', 'get'>['delivery'];

/**
 * The event a delivery sends. A test event (webhook.ping) is sent to one endpoint and never written
 * to the log; a replay goes out under a synthetic event id of its own, so its event is the one of
 * the delivery it copies (sourceEventId), which is what is linked.
 */
function EventFact({ delivery: d }: { delivery: Delivery }) {
  if (d.sourceEventId) {
    return (
      <>
        <IdLink id={d.sourceEventId} />
        {d.replayOf ? <small className="muted"> (sent again by this replay under the id {d.eventId})</small> : null}
      </>
    );
  }
  return (
    <>
      <code>{d.eventId}</code> <small className="muted">({d.replayOf ? 'a replay of a test event' : 'a test event'}: not in the event log)</small>
    </>
  );
}

/** One delivery: what was sent, what came back, and a replay. */
export function DeliveryDetail() {
  const { deliveryId } = useParams<{ deliveryId: string }>();
  const { client, can } = useApp();
  const [, navigate] = useLocation();
  const loaded = useLoad(async () => (await client.GET('/v1/webhooks/deliveries/{deliveryId}', { params: { path: { deliveryId } } })).delivery, [deliveryId]);
  const replay = useAction(async () => {
    const { delivery } = await client.POST('/v1/webhooks/deliveries/{deliveryId}/replay', { params: { path: { deliveryId } } });
    navigate(`/deliveries/${delivery.id}`);
  });
  const d = loaded.data;
  // A pending delivery (a replay just queued, a retry) is looked at again until it settles: after
  // half a second, then less often while it stays the same, up to every 30 seconds.
  usePolling(loaded.reload, loaded.data, d ? `${d.status}/${d.attempt}` : '', { startMs: 500, maxMs: 30_000, enabled: d?.status === 'pending' });

  return (
    <section>
      <nav aria-label="Breadcrumb">
        <ul>
          <li>
            <Link href="/deliveries">Deliveries</Link>
          </li>
          <li>
            <code>{deliveryId}</code>
          </li>
        </ul>
      </nav>
      <ErrorBox error={loaded.error} retry={loaded.reload} />
      {d ? (
        <>
          <header className="title-row">
            <h1>
              {d.eventType} <Badge value={d.status} />
            </h1>
            <div className="actions">
              <button type="button" className="secondary outline" onClick={loaded.reload}>
                Refresh
              </button>
              {can('workspace:developer:write') ? (
                <button type="button" onClick={() => void replay.run()} aria-busy={replay.running} disabled={replay.running}>
                  Replay
                </button>
              ) : null}
            </div>
          </header>
          <ErrorBox error={replay.error} />
          <dl className="facts">
            <dt>Endpoint</dt>
            <dd>
              <Link href={`/endpoints/${d.endpointId}`}>
                <code>{d.endpointId}</code>
              </Link>
            </dd>
            <dt>Event</dt>
            <dd>
              <EventFact delivery={d} />
            </dd>
            <dt>Attempts</dt>
            <dd>{d.attempt}</dd>
            <dt>Created</dt>
            <dd>
              <Time value={d.createdAt} />
            </dd>
            <dt>Delivered</dt>
            <dd>
              <Time value={d.deliveredAt} />
            </dd>
            <dt>Next attempt</dt>
            <dd>
              <Time value={d.nextAttemptAt} />
            </dd>
            {d.replayOf ? (
              <>
                <dt>Replay of</dt>
                <dd>
                  <Link href={`/deliveries/${d.replayOf}`}>
                    <code>{d.replayOf}</code>
                  </Link>
                </dd>
              </>
            ) : null}
            {d.error ? (
              <>
                <dt>Last error</dt>
                <dd>{d.error}</dd>
              </>
            ) : null}
          </dl>
          <div className="grid exchange">
            <div>
              <h2>Request</h2>
              <Headers value={d.requestHeaders} empty="Not sent yet." />
              <pre className="code" tabIndex={0} aria-label="Request body">
                {JSON.stringify(d.requestBody, null, 2)}
              </pre>
            </div>
            <div>
              <h2>
                Response{' '}
                {d.responseStatus !== null ? (
                  <small>
                    {d.responseStatus} · {d.responseTimeMs} ms
                  </small>
                ) : null}
              </h2>
              <Headers value={d.responseHeaders} empty="No response." />
              {d.responseBody !== null ? (
                <pre className="code" tabIndex={0} aria-label="Response body">
                  {d.responseBody || '(empty body)'}
                </pre>
              ) : null}
            </div>
          </div>
          <AttemptsTimeline deliveryId={d.id} refresh={`${d.attempt}/${d.status}`} />
        </>
      ) : loaded.loading ? (
        <p aria-busy="true">Loading…</p>
      ) : null}
    </section>
  );
}
