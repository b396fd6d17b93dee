import { useState } from 'react';
import { useApp } from '../../api/app-state';
import { useAction, useLoad } from '../../api/hooks';
import { pushUnsupported, subscribeThisBrowser, thisBrowsersDevice } from '../../api/push';
import { ConfirmButton } from '../../components/confirm';
import { ErrorBox } from '../../components/error-box';
import { Time } from '../../components/format';

/**
 * Push notifications: "Notify this browser" where the browser has the Push API, and the person's
 * registered devices (a small list, every row at once), each with Remove.
 */
export function PushDevices() {
  const { client } = useApp();
  const devices = useLoad(async () => (await client.GET('/v1/me/push-devices')).data, [client]);
  const [subscribed, setSubscribed] = useState(false);
  const subscribe = useAction(async () => {
    await subscribeThisBrowser(client);
    setSubscribed(true);
    devices.reload();
  });
  const remove = useAction(async (id: string) => {
    await client.DELETE('/v1/me/push-devices/{deviceId}', { params: { path: { deviceId: id } } });
    devices.reload();
  });
  const unsupported = pushUnsupported();
  const mine = thisBrowsersDevice();

  return (
    <section aria-labelledby="push-heading" data-testid="push-devices">
      <h2 id="push-heading">Push notifications</h2>
      <p>Each notice can also appear on your devices as it happens, even when no dashboard page is open.</p>
      {unsupported ? (
        <p className="muted" data-testid="push-unsupported">
          {unsupported} You can still read every notice here.
        </p>
      ) : (
        <p>
          <button type="button" onClick={() => void subscribe.run()} aria-busy={subscribe.running} disabled={subscribe.running}>
            Notify this browser
          </button>{' '}
          {subscribed ? <span role="status">This browser will be notified.</span> : null}
        </p>
      )}
      <ErrorBox error={subscribe.error ?? remove.error ?? devices.error} retry={devices.error ? devices.reload : undefined} />
      {devices.data && devices.data.length === 0 ? <p className="muted">No device is registered: notices wait on this page.</p> : null}
      {devices.data && devices.data.length > 0 ? (
        <div className="table-wrap">
          <table className="striped" data-testid="push-device-list">
            <thead>
              <tr>
                <th scope="col">Device</th>
                <th scope="col">Push service</th>
                <th scope="col">Added</th>
                <th scope="col">Last notified</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {devices.data.map((d) => (
                <tr key={d.id}>
                  <td>
                    {d.name} {d.id === mine ? <small className="muted">(this browser)</small> : null}
                  </td>
                  <td>
                    <code>{d.pushService}</code>
                  </td>
                  <td>
                    <Time value={d.createdAt} />
                  </td>
                  <td>{d.lastUsedAt ? <Time value={d.lastUsedAt} /> : <span className="muted">not yet</span>}</td>
                  <td>
                    <ConfirmButton label="Remove" name={`Remove ${d.name}`} className="secondary outline small" title="Remove this device?" confirmLabel="Remove" danger onConfirm={() => remove.run(d.id)}>
                      <p>Nothing more is pushed to {d.name}. Notices stay on this page.</p>
                    </ConfirmButton>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {devices.loading && !devices.data ? <p aria-busy="true">Loading devices…</p> : null}
    </section>
  );
}
