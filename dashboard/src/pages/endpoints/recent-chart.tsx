import { lazy, Suspense, useMemo } from 'react';
import type { WebhookDelivery } from '@svc/sdk';
import type { ChartSeries } from '../../components/chart';

const Chart = lazy(() => import('../../components/chart'));

/**
 * Latency and success of an endpoint's recent deliveries (up to 100): each finished delivery's
 * round trip, and the success rate over the ten finished before it.
 */
export function RecentChart({ deliveries }: { deliveries: WebhookDelivery[] }) {
  const chart = useMemo(() => {
    const finished = deliveries.filter((d) => d.status === 'success' || d.status === 'failed').reverse();
    const x = finished.map((d) => Date.parse(d.createdAt) / 1000);
    const latency = finished.map((d) => d.responseTimeMs);
    const rate = finished.map((_, i) => {
      const window = finished.slice(Math.max(0, i - 9), i + 1);
      return Math.round((100 * window.filter((d) => d.status === 'success').length) / window.length);
    });
    const series: ChartSeries[] = [
      { label: 'Latency (ms)', values: latency, stroke: '#1f6feb' },
      { label: 'Success (% of last 10)', values: rate, stroke: '#2f8f4e', scale: '%' },
    ];
    const ok = finished.filter((d) => d.status === 'success').length;
    const summary = `${finished.length} recent finished deliveries, ${ok} succeeded; latest latency ${latency.at(-1) ?? 'n/a'} ms.`;
    return { x, series, summary, count: finished.length };
  }, [deliveries]);
  if (chart.count < 2) return null;
  return (
    <Suspense fallback={<p aria-busy="true">Loading chart…</p>}>
      <Chart x={chart.x} series={chart.series} summary={chart.summary} />
    </Suspense>
  );
}
