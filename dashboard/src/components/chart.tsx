import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface ChartSeries {
  label: string;
  values: (number | null)[];
  /** A CSS colour of the stylesheet's palette. */
  stroke: string;
  /** Bars for counts, a line for measures. */
  bars?: boolean;
  /** A second scale on the right (e.g. a percentage beside milliseconds). */
  scale?: string;
}

export interface ChartProps {
  /** What the chart shows, for people who cannot see it (the canvas is an image to assistive technology). */
  summary: string;
  /** Times in seconds since the epoch. */
  x: number[];
  series: ChartSeries[];
  height?: number;
}

/**
 * A time-series chart drawn by uPlot (canvas, about 20 KB gzipped, loaded only by pages that chart),
 * as wide as its container.
 */
export default function Chart({ summary, x, series, height = 220 }: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const bars = uPlot.paths.bars?.({ size: [0.6, 24] });
    const options: uPlot.Options = {
      width: Math.max(240, element.clientWidth),
      height,
      series: [
        {},
        ...series.map((s) => ({
          label: s.label,
          stroke: s.stroke,
          fill: s.bars ? s.stroke : undefined,
          width: s.bars ? 0 : 2,
          paths: s.bars ? bars : undefined,
          points: { show: !s.bars },
          scale: s.scale ?? 'y',
          spanGaps: true,
        })),
      ],
      axes: [{}, { scale: 'y' }, ...(series.some((s) => s.scale && s.scale !== 'y') ? [{ scale: series.find((s) => s.scale && s.scale !== 'y')!.scale, side: 1 as const, grid: { show: false } }] : [])],
      // A percentage scale shows 0-100 whatever the values.
      scales: { x: { time: true }, ...(series.some((s) => s.scale === '%') ? { '%': { range: [0, 100] as uPlot.Range.MinMax } } : {}) },
      legend: { show: true },
    };
    const plot = new uPlot(options, [x, ...series.map((s) => s.values)], element);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(240, element.clientWidth), height }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [x, series, height]);
  return (
    <figure className="chart">
      <div ref={box} role="img" aria-label={summary} />
      <figcaption className="muted">{summary}</figcaption>
    </figure>
  );
}
