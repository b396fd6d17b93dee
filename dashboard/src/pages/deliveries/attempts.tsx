import type { Schemas } from '../../api/client';
import { useApp } from '../../api/app-state';
import { usePaged } from '../../api/hooks';
import { ErrorBox } from '../../components/error-box';
import { Badge, Time } from '../../components/format';
import { Pager } from '../../components/pager';
import { Headers } from './headers';

type Attempt = Schemas['WebhookDeliveryAttempt'];

/**
 * A delivery's attempts, newest first, a page at a time: when each started, what came back and how
 * long it took, and (opened on demand) the headers sent and the answer's headers and body.
 * `refresh` changes when the delivery does (another attempt made).
 */
export function AttemptsTimeline({ deliveryId, refresh }: { deliveryId: string; refresh: string }) {
  const { client } = useApp();
  const list = usePaged<Attempt>(
    client,
    () => client.GET('/v1/webhooks/deliveries/{deliveryId}/attempts', { params: { path: { deliveryId }, query: { limit: 10 } } }),
    [deliveryId, refresh],
  );
  const attempts = list.data?.data ?? [];
  return (
    <>
      <h2>Attempts</h2>
      <ErrorBox error={list.error} retry={list.reload} />
      {list.data && attempts.length === 0 && list.pageNumber === 1 ? <p className="muted">No attempt yet: the delivery is queued or was never sent.</p> : null}
      {attempts.length > 0 ? (
        <ol className="timeline" data-testid="attempts">
          {attempts.map((a) => (
            <li key={a.attempt} data-testid="attempt">
              <article className={`attempt ${a.error ? 'failed' : 'ok'}`}>
                <header className="attempt-head">
                  <strong>Attempt {a.attempt}</strong> <Badge value={a.error ? 'failed' : 'success'} /> <Time value={a.startedAt} />
                  <span>
                    {a.responseStatus !== null ? <code>HTTP {a.responseStatus}</code> : <span className="muted">no response</span>}
                    {a.responseTimeMs !== null ? <span className="muted"> · {a.responseTimeMs} ms</span> : null}
                  </span>
                </header>
                {a.error ? <p className="attempt-error">{a.error}</p> : null}
                <details>
                  <summary>Request and response of attempt {a.attempt}</summary>
                  <h3>Request headers</h3>
                  <Headers value={a.requestHeaders} empty="No request was built." />
                  <p className="muted">
                    <small>The request body is the delivery's, the same for every attempt: shown under Request above.</small>
                  </p>
                  <h3>Response headers</h3>
                  <Headers value={a.responseHeaders} empty="No response." />
                  {a.responseBody !== null ? (
                    <pre className="code" tabIndex={0} aria-label={`Body of the answer to attempt ${a.attempt}`}>
                      {a.responseBody || '(empty body)'}
                    </pre>
                  ) : null}
                </details>
              </article>
            </li>
          ))}
        </ol>
      ) : null}
      {list.loading && !list.data ? <p aria-busy="true">Loading…</p> : null}
      <Pager list={list} label="Attempts" />
    </>
  );
}
