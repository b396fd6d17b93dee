import { lazy, Suspense, useMemo } from 'react';
import type { WebhookDelivery } from '@svc/sdk';
import { useApp } from '../../api/app-state';
import { useFilters } from '../../api/filters';
import { useLoad } from '../../api/hooks';
import type { ChartSeries } from '../../components/chart';
import { ErrorBox } from '../../components/error-box';
import { ms, percent, StatsLine, useStats, WINDOWS, type EndpointStats, type StatsWindow } from './stats';

const Chart = lazy(() => import('../../components/chart'));

const WINDOW_MS: Record<StatsWindow, number> = { '1h': 3_600_000, '24h': 86_400_000, '7d': 604_800_000 };

/**
 * An endpoint's health over a window (kept in the page's address, `?window=7d`): the figures of the
 * stats route, a chart of its attempts and success rate per bucket, and one of latency. `refresh`
 * changes when the endpoint's deliveries do.
 */
export function HealthPanel({ endpointId, refresh }: { endpointId: string; refresh: unknown }) {
  const { client } = useApp();
  const [filters, setFilters] = useFilters(['window'] as const);
  const window: StatsWindow = WINDOWS.some((w) => w.value === filters.window) ? (filters.window as StatsWindow) : '24h';
  const stats = useStats(endpointId, window, refresh);
  // The stats route has latency percentiles but no latency series: the chart plots the latest
  // attempt of each delivery in the window (the newest 100), beside the window's percentiles.
  const recent = useLoad(
    async () =>
      (
        await client.GET('/v1/webhooks/deliveries', {
          params: { query: { endpointId, limit: 100, createdGte: new Date(Date.now() - WINDOW_MS[window]).toISOString() } },
        })
      ).data,
    [endpointId, window, refresh],
  );

  return (
    <section aria-labelledby="health-title" data-testid="endpoint-health">
      <header className="title-row">
        <h2 id="health-title">Health</h2>
        <div role="group" aria-label="Window" className="windows">
          {WINDOWS.map((w) => (
            <button
              key={w.value}
              type="button"
              className={w.value === window ? undefined : 'secondary outline'}
              aria-pressed={w.value === window}
              onClick={() => setFilters({ window: w.value === '24h' ? undefined : w.value })}
            >
              {w.label}
            </button>
          ))}
        </div>
      </header>
      <ErrorBox error={stats.error} retry={stats.reload} />
      {stats.data ? (
        <>
          <Figures stats={stats.data} />
          {stats.data.attempts > 0 ? <Charts stats={stats.data} deliveries={recent.data ?? []} /> : null}
        </>
      ) : (
        <p aria-busy="true">Loading…</p>
      )}
    </section>
  );
}

function Figures({ stats }: { stats: EndpointStats }) {
  return (
    <>
      <p>
        <StatsLine stats={stats} />
      </p>
      <dl className="facts figures">
        <dt>Attempts</dt>
        <dd>{stats.attempts}</dd>
        <dt>Succeeded</dt>
        <dd>{stats.successes}</dd>
        <dt>Failed</dt>
        <dd>{stats.failures}</dd>
        <dt>Success rate</dt>
        <dd data-testid="success-rate">{stats.successRate === null ? '—' : percent(stats.successRate)}</dd>
        <dt>Latency p50 / p95 / p99</dt>
        <dd>
          {ms(stats.latencyMs.p50)} / {ms(stats.latencyMs.p95)} / {ms(stats.latencyMs.p99)}
        </dd>
      </dl>
    </>
  );
}

function Charts({ stats, deliveries }: { stats: EndpointStats; deliveries: WebhookDelivery[] }) {
  const attempts = useMemo(() => {
    const x = stats.series.map((b) => Date.parse(b.start) / 1000);
    // Failed bars are drawn over the total's: the total's bar shows above them as the successes.
    const series: ChartSeries[] = [
      { label: 'Attempts', values: stats.series.map((b) => b.successes + b.failures), stroke: '#2f8f4e', bars: true },
      { label: 'Failed', values: stats.series.map((b) => b.failures), stroke: '#b42318', bars: true },
      { label: 'Success rate (%)', values: stats.series.map((b) => (b.successes + b.failures ? Math.round((1000 * b.successes) / (b.successes + b.failures)) / 10 : null)), stroke: '#1f6feb', scale: '%' },
    ];
    const summary = `${stats.attempts} attempts in the ${stats.window} window, ${stats.successes} succeeded (${percent(stats.successRate ?? 0)}), in ${stats.series.length} buckets.`;
    return { x, series, summary };
  }, [stats]);
  const latency = useMemo(() => {
    const done = deliveries.filter((d) => d.responseTimeMs !== null).reverse();
    const x = done.map((d) => Date.parse(d.deliveredAt ?? d.createdAt) / 1000);
    const flat = (value: number | null) => done.map(() => value);
    const series: ChartSeries[] = [
      { label: 'Latency of a delivery (ms)', values: done.map((d) => d.responseTimeMs), stroke: '#1f6feb' },
      { label: 'p50 (ms)', values: flat(stats.latencyMs.p50), stroke: '#2f8f4e' },
      { label: 'p95 (ms)', values: flat(stats.latencyMs.p95), stroke: '#8a5a00' },
    ];
    const summary = `Latency of the latest attempt of ${done.length} deliveries in the window; the window's p50 is ${ms(stats.latencyMs.p50)}, p95 ${ms(stats.latencyMs.p95)}, p99 ${ms(stats.latencyMs.p99)}.`;
    return { x, series, summary, count: done.length };
  }, [deliveries, stats]);
  return (
    <Suspense fallback={<p aria-busy="true">Loading charts…</p>}>
      <h3>Attempts and success rate</h3>
      <Chart x={attempts.x} series={attempts.series} summary={attempts.summary} />
      {latency.count >= 2 ? (
        <>
          <h3>Latency</h3>
          <Chart x={latency.x} series={latency.series} summary={latency.summary} />
        </>
      ) : null}
    </Suspense>
  );
}
