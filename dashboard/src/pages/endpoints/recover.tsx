import { useEffect, useState, type FormEvent } from 'react';
import { useApp } from '../../api/app-state';
import type { Schemas } from '../../api/client';
import { toIso, toLocal } from '../../api/filters';
import { useAction, usePaged } from '../../api/hooks';
import { ConfirmButton } from '../../components/confirm';
import { ErrorBox } from '../../components/error-box';
import { Badge, Time } from '../../components/format';
import { Pager } from '../../components/pager';
import { TableWrap } from '../../components/table-wrap';

type Recovery = Schemas['WebhookRecovery'];
type Status = 'failed' | 'disabled';
interface Window {
  since: string;
  until?: string;
  statuses: Status[];
}

/**
 * Bulk recovery of an endpoint's failed (and disabled) deliveries: a dry run counts them, the real
 * run asks first; a recovery still running is followed every second until it completes or fails.
 */
export function RecoverPanel({ endpointId, writable, onRecovered }: { endpointId: string; writable: boolean; onRecovered(): void }) {
  const { client } = useApp();
  const path = { params: { path: { endpointId } } };
  const [since, setSince] = useState(() => toLocal(new Date(Date.now() - 24 * 3600_000).toISOString())!);
  const [until, setUntil] = useState('');
  const [statuses, setStatuses] = useState<Status[]>(['failed', 'disabled']);
  const [preview, setPreview] = useState<{ count: number; window: Window } | null>(null);
  const [recovery, setRecovery] = useState<Recovery | null>(null);
  const list = usePaged<Recovery>(client, () => client.GET('/v1/webhooks/endpoints/{endpointId}/recoveries', { params: { path: { endpointId }, query: { limit: 5 } } }), [endpointId]);

  const chosen = (): Window => ({ since: toIso(since)!, ...(until ? { until: toIso(until) } : {}), statuses });
  const dryRun = useAction(async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    setRecovery(null);
    const asked = chosen();
    const answer = (await client.POST('/v1/webhooks/endpoints/{endpointId}/recover', { ...path, body: { ...asked, dryRun: true } })) as { count: number };
    setPreview({ count: answer.count, window: asked });
  });
  const run = useAction(async () => {
    if (!preview) return;
    const made = (await client.POST('/v1/webhooks/endpoints/{endpointId}/recover', { ...path, body: preview.window })) as Recovery;
    setPreview(null);
    setRecovery(made);
    list.reload();
    if (made.status !== 'running') onRecovered();
  });

  // A running recovery is asked about every second until it is done.
  const running = recovery?.status === 'running' ? recovery.id : null;
  useEffect(() => {
    if (!running) return;
    let stopped = false;
    const timer = setTimeout(async () => {
      try {
        const now = await client.GET('/v1/webhooks/recoveries/{recoveryId}', { params: { path: { recoveryId: running } } });
        if (stopped) return;
        setRecovery(now);
        if (now.status !== 'running') {
          list.reload();
          onRecovered();
        }
      } catch {
        // Asked again at the next tick.
        if (!stopped) setRecovery((r) => (r ? { ...r } : r));
      }
    }, 1000);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [running, recovery]);

  const toggle = (status: Status, on: boolean) => {
    setStatuses((s) => (on ? [...s.filter((x) => x !== status), status] : s.filter((x) => x !== status)));
    setPreview(null);
  };
  return (
    <section aria-labelledby="recover-title" data-testid="recover">
      <h2 id="recover-title">Recover</h2>
      {writable ? (
        <>
          <p className="muted">After an outage of the receiver: send its failed deliveries again in one go (each as a replay with the same body). Deliveries already replayed are skipped.</p>
          <form onSubmit={(e) => void dryRun.run(e)} className="recover-form">
            <div className="grid">
              <label>
                Since
                <input type="datetime-local" name="since" required value={since} onChange={(e) => (setSince(e.target.value), setPreview(null))} />
              </label>
              <label>
                Until (empty: now)
                <input type="datetime-local" name="until" value={until} onChange={(e) => (setUntil(e.target.value), setPreview(null))} />
              </label>
            </div>
            <fieldset>
              <legend>Deliveries that are</legend>
              {(['failed', 'disabled'] as const).map((status) => (
                <label key={status}>
                  <input type="checkbox" checked={statuses.includes(status)} onChange={(e) => toggle(status, e.target.checked)} /> {status}
                </label>
              ))}
            </fieldset>
            <button type="submit" className="secondary" disabled={dryRun.running || statuses.length === 0} aria-busy={dryRun.running}>
              Preview
            </button>
          </form>
          <ErrorBox error={dryRun.error ?? run.error} />
          {preview ? (
            <div className="actions" role="status" data-testid="recover-preview">
              <p>
                <strong>{preview.count}</strong> {preview.count === 1 ? 'delivery' : 'deliveries'} would be sent again.
              </p>
              {preview.count > 0 ? (
                <ConfirmButton label={`Recover ${preview.count} ${preview.count === 1 ? 'delivery' : 'deliveries'}`} title="Send these deliveries again?" confirmLabel="Recover" onConfirm={() => run.run()}>
                  <p>
                    {preview.count} {preview.count === 1 ? 'delivery' : 'deliveries'} ({preview.window.statuses.join(', ')}) of this endpoint become new deliveries with the same body, sent at once.
                  </p>
                </ConfirmButton>
              ) : null}
            </div>
          ) : null}
          {recovery?.status === 'running' ? <progress value={recovery.replayed + recovery.skipped} max={Math.max(recovery.count, 1)} aria-label="Recovery progress" /> : null}
          {recovery ? (
            <p role="status" data-testid="recovery-progress">
              Recovery <code>{recovery.id}</code> <Badge value={recovery.status} />: {recovery.replayed} of {recovery.count} replayed, {recovery.skipped} skipped
              {recovery.error ? `; ${recovery.error}` : ''}.
            </p>
          ) : null}
        </>
      ) : null}
      <ErrorBox error={list.error} retry={list.reload} />
      {list.data?.data.length ? (
        <>
          <TableWrap label="Recent recoveries">
            <table className="striped cards" data-testid="recoveries">
              <caption>Recent recoveries</caption>
              <thead>
                <tr>
                  <th scope="col">Made</th>
                  <th scope="col">Window</th>
                  <th scope="col">Status</th>
                  <th scope="col">Replayed</th>
                  <th scope="col">Skipped</th>
                </tr>
              </thead>
              <tbody>
                {list.data.data.map((r) => (
                  <tr key={r.id}>
                    <td data-label="Made">
                      <Time value={r.createdAt} />
                    </td>
                    <td data-label="Window">
                      <Time value={r.since} /> – <Time value={r.until} /> <small className="muted">({r.statuses.join(', ')})</small>
                    </td>
                    <td data-label="Status">
                      <Badge value={r.status} />
                      {r.error ? <small> {r.error}</small> : null}
                    </td>
                    <td data-label="Replayed">
                      {r.replayed} of {r.count}
                    </td>
                    <td data-label="Skipped">{r.skipped}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          <Pager list={list as never} label="Recoveries" />
        </>
      ) : list.data ? (
        <p className="muted">No recovery of this endpoint yet.</p>
      ) : null}
    </section>
  );
}
