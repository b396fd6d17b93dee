import type { WebhookDelivery, WebhookEndpoint } from '@svc/sdk';
import { useApp } from '../../api/app-state';
import { useLoad } from '../../api/hooks';
import { Badge, Time } from '../../components/format';

/** Active, paused (by a person) or auto-disabled (after 5 consecutive failed deliveries). */
export function endpointState(endpoint: WebhookEndpoint): 'active' | 'paused' | 'auto-disabled' {
  if (endpoint.active) return 'active';
  return endpoint.disabledReason === 'auto' ? 'auto-disabled' : 'paused';
}

export const STATE_HELP: Record<ReturnType<typeof endpointState>, string> = {
  active: 'Receives deliveries.',
  paused: 'Paused by a person: events get disabled deliveries, sent after re-enabling only by a replay.',
  'auto-disabled': 'Disabled after 5 consecutive failed deliveries. Fix the receiver, then re-enable it and replay what it missed.',
};

/** The share of finished deliveries that succeeded, among `rows`. */
export function successShare(rows: WebhookDelivery[]): { done: number; ok: number } {
  const done = rows.filter((d) => d.status === 'success' || d.status === 'failed');
  return { done: done.length, ok: done.filter((d) => d.status === 'success').length };
}

/** An endpoint's recent health: the outcome of its last 20 deliveries and the latest one. */
export function RecentHealth({ endpointId }: { endpointId: string }) {
  const { client } = useApp();
  const recent = useLoad(async () => (await client.GET('/v1/webhooks/deliveries', { params: { query: { endpointId, limit: 20 } } })).data, [endpointId]);
  if (!recent.data) return <span className="muted">{recent.error ? 'unknown' : '…'}</span>;
  if (recent.data.length === 0) return <span className="muted">no deliveries yet</span>;
  const { done, ok } = successShare(recent.data);
  const last = recent.data[0];
  return (
    <span>
      {done > 0 ? `${Math.round((100 * ok) / done)}% of ${done} succeeded` : 'none finished'}
      <br />
      <small className="muted">
        last: <Badge value={last.status} /> <Time value={last.createdAt} />
      </small>
    </span>
  );
}
