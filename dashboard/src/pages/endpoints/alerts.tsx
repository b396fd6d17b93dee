import type { WebhookEndpoint } from '@svc/sdk';
import { Time } from '../../components/format';

type Failing = NonNullable<WebhookEndpoint['failing']>;

/** What fails, in words: the status and the error of the latest failed attempt when the alert was raised. */
export function whatFails(failing: Failing): string {
  if (failing.error) return failing.error;
  return failing.responseStatus !== null ? `HTTP ${failing.responseStatus}` : 'no answer';
}

/** A failing endpoint in a line: since when and what fails (the endpoints list). */
export function FailingLine({ failing }: { failing: Failing }) {
  return (
    <small className="failing" data-testid="endpoint-failing-line">
      failing since <Time value={failing.since} />: {whatFails(failing)}
    </small>
  );
}

/** A failing endpoint on its page: since when, what fails, how many deliveries waited, what comes next. */
export function FailingNotice({ failing }: { failing: Failing }) {
  return (
    <p role="alert" className="notice bad" data-testid="endpoint-failing">
      <strong>Failing</strong> since <Time value={failing.since} />: every attempt has failed ({whatFails(failing)}); {failing.deliveriesWaiting}{' '}
      {failing.deliveriesWaiting === 1 ? 'delivery was' : 'deliveries were'} waiting for a retry when this was noticed. The endpoint is disabled after 5 failed
      deliveries in a row: fix the receiver, or pause it.
    </p>
  );
}

/** The alerts setting, with its switch for people who may change the endpoint. */
export function AlertsFact({ endpoint, writable, onChange, busy }: { endpoint: WebhookEndpoint; writable: boolean; onChange: (alerts: boolean) => void; busy: boolean }) {
  return (
    <>
      <dt>Failure alerts</dt>
      <dd data-testid="endpoint-alerts">
        <label>
          <input type="checkbox" role="switch" checked={endpoint.alerts} disabled={!writable || busy} onChange={(e) => onChange(e.target.checked)} />{' '}
          {endpoint.alerts
            ? 'on: people who can read webhooks are told when it fails for a while, before it is disabled, and when it delivers again'
            : 'off: nobody is told when it fails (it is still disabled after 5 failed deliveries in a row, with a notice)'}
        </label>
      </dd>
    </>
  );
}
