import type { WebhookEndpointStats } from '@svc/sdk';
import { useApp } from '../../api/app-state';
import { useLoad } from '../../api/hooks';

export type EndpointStats = WebhookEndpointStats;
export type StatsWindow = EndpointStats['window'];
export const WINDOWS: { value: StatsWindow; label: string }[] = [
  { value: '1h', label: 'Last hour' },
  { value: '24h', label: 'Last 24 hours' },
  { value: '7d', label: 'Last 7 days' },
];

/** An endpoint's attempts over a window, from GET /v1/webhooks/endpoints/{id}/stats; `refresh` asks again. */
export function useStats(endpointId: string, window: StatsWindow, refresh?: unknown) {
  const { client } = useApp();
  return useLoad(() => client.GET('/v1/webhooks/endpoints/{endpointId}/stats', { params: { path: { endpointId }, query: { window } } }), [endpointId, window, refresh]);
}

/** 0.75 → "75%", 0.9994 → "99.9%": whole percents unless that would round a failure away. */
export function percent(rate: number): string {
  const whole = Math.round(rate * 100);
  return (whole === 100 && rate < 1) || (whole === 0 && rate > 0) ? `${(rate * 100).toFixed(1)}%` : `${whole}%`;
}

const ms = (value: number | null) => (value === null ? '—' : `${value} ms`);

/** "75% of 4 attempts" and the latency percentiles, for the endpoints list and the endpoint's page. */
export function StatsLine({ stats }: { stats: EndpointStats }) {
  if (stats.attempts === 0 || stats.successRate === null) return <span className="muted">no attempts in {stats.window}</span>;
  return (
    <span data-testid="stats-line">
      <strong>{percent(stats.successRate)}</strong> of {stats.attempts} attempt{stats.attempts === 1 ? '' : 's'} succeeded
      <br />
      <small className="muted">
        p50 {ms(stats.latencyMs.p50)} · p95 {ms(stats.latencyMs.p95)} · p99 {ms(stats.latencyMs.p99)}
      </small>
    </span>
  );
}

export { ms };
