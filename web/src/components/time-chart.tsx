import { useEffect, useMemo, useRef, useState } from 'react';
import uPlot, { type AlignedData, type Options } from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { MetricsEvent } from '../api/types';
import { formatDateTime, TIME_ZONE } from '../lib/time';

export interface ChartSeries {
  label: string;
  color: string;
  values: (number | null)[];
}

export interface TimeChartProps {
  /** accessible name of the chart */
  title: string;
  /** x values in epoch milliseconds */
  x: number[];
  series: ChartSeries[];
  /** stack the series (throughput by status class); the legend still shows each series' own value */
  stacked?: boolean;
  format: (v: number | null) => string;
  markers?: MetricsEvent[];
  /** the values are counts: axis ticks on whole numbers */
  integer?: boolean;
  /** click on the plot: the time under the cursor (to create an event marker there) */
  onPickTime?: (t: Date) => void;
  height?: number;
}

const MARKER_COLORS: Record<string, string> = {
  deployment: '#1f4fd1',
  incident: '#c62828',
  config_change: '#8e44ad',
  scale: '#00897b',
  custom: '#6b7280',
};

/** One shared empty list: a new `[]` per render would re-run the marker effect on every render. */
const NO_MARKERS: MetricsEvent[] = [];

const INTEGER_STEPS = [
  1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 1e7, 1e8,
];

function hasIsolated(values: (number | null)[]): boolean {
  return values.some(
    (v, i) => v !== null && (values[i - 1] ?? null) === null && (values[i + 1] ?? null) === null,
  );
}

export function markerColor(type: string): string {
  return MARKER_COLORS[type] ?? MARKER_COLORS.custom!;
}

/**
 * A uPlot time-series chart (canvas; thousands of points draw in a few ms) with event markers as
 * vertical lines (a span shaded for duration events) and a hover card per marker.
 */
export function TimeChart({
  title,
  x,
  series,
  stacked,
  format,
  markers = NO_MARKERS,
  integer,
  onPickTime,
  height = 220,
}: TimeChartProps) {
  const wrap = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const [hover, setHover] = useState<{ m: MetricsEvent; left: number } | null>(null);
  const [positions, setPositions] = useState<{ m: MetricsEvent; left: number }[]>([]);
  const markersRef = useRef(markers);
  markersRef.current = markers;
  const pickRef = useRef(onPickTime);
  pickRef.current = onPickTime;

  const data = useMemo<AlignedData>(() => {
    const xs = x.map((t) => t / 1000);
    if (!stacked) return [xs, ...series.map((s) => s.values)];
    // Cumulative sums, drawn from the top total down so each class covers only its own band.
    const sums: (number | null)[][] = [];
    let acc = xs.map(() => 0);
    for (const s of series) {
      acc = acc.map((a, i) => a + (s.values[i] ?? 0));
      sums.push([...acc]);
    }
    return [xs, ...sums.reverse()];
  }, [x, series, stacked]);

  const ordered = useMemo(() => (stacked ? [...series].reverse() : series), [series, stacked]);
  const key = ordered.map((s) => s.label + s.color).join('|') + (stacked ? ':s' : '');

  useEffect(() => {
    const el = wrap.current;
    if (!el) return;
    const place = (u: uPlot) =>
      setPositions(
        markersRef.current
          .map((m) => ({ m, left: u.valToPos(Date.parse(m.startedAt) / 1000, 'x') }))
          .filter((p) => Number.isFinite(p.left) && p.left >= 0 && p.left <= u.over.clientWidth),
      );
    const opts: Options = {
      width: Math.max(el.clientWidth, 200),
      height,
      legend: { show: true, live: true },
      // No drag-zoom; a click (even with the mouse moving) picks a time instead of being
      // swallowed as the end of a drag.
      cursor: { drag: { x: false, y: false, click: () => undefined }, points: { size: 6 } },
      scales: {
        x: { time: true },
        y: { range: (_u, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1] },
      },
      axes: [
        { stroke: '#5b6170', grid: { stroke: '#eef0f4' }, ticks: { stroke: '#dfe3ea' } },
        {
          stroke: '#5b6170',
          grid: { stroke: '#eef0f4' },
          ticks: { stroke: '#dfe3ea' },
          // Wide enough for the longest label ("2,000 ms"), measured in characters of the 12 px font.
          size: (_u: uPlot, values: string[] | null) =>
            Math.max(48, Math.ceil(Math.max(0, ...(values ?? []).map((v) => String(v).length)) * 7.2) + 22),
          // Counts tick on whole numbers only (no "0, 0, 1, 1" on an idle range).
          ...(integer ? { incrs: INTEGER_STEPS } : {}),
          values: (_u, vals) => vals.map((v) => format(v)),
        },
      ],
      series: [
        { label: 'Time', value: (_u, v) => (v == null ? '–' : formatDateTime(v * 1000)) },
        ...ordered.map((s, i) => ({
          label: s.label,
          stroke: s.color,
          width: 1.5,
          fill: stacked ? s.color + 'cc' : undefined,
          // Points only when a value stands alone between gaps: no line would show it.
          points: { show: !stacked && hasIsolated(s.values), size: 5 },
          spanGaps: false,
          // The legend shows the series' own value, not the stacked total.
          value: (_u: uPlot, v: number | null, _si: number, idx: number | null) =>
            stacked && idx !== null ? format(ordered[i]!.values[idx] ?? 0) : format(v),
        })),
      ],
      hooks: {
        draw: [
          (u) => {
            const ctx = u.ctx;
            const { top, height: h } = u.bbox;
            ctx.save();
            for (const m of markersRef.current) {
              const x0 = u.valToPos(Date.parse(m.startedAt) / 1000, 'x', true);
              const color = markerColor(m.type);
              if (m.endedAt) {
                const x1 = u.valToPos(Date.parse(m.endedAt) / 1000, 'x', true);
                ctx.fillStyle = color + '1f';
                ctx.fillRect(x0, top, Math.max(x1 - x0, 1), h);
              }
              ctx.strokeStyle = color;
              ctx.lineWidth = 2 * uPlot.pxRatio;
              ctx.setLineDash([6 * uPlot.pxRatio, 4 * uPlot.pxRatio]);
              ctx.beginPath();
              ctx.moveTo(x0, top);
              ctx.lineTo(x0, top + h);
              ctx.stroke();
            }
            ctx.restore();
          },
        ],
        ready: [
          (u) => {
            place(u);
            // The click's own position: uPlot moves its cursor on the next frame, so
            // `u.cursor.left` can still hold the previous position when a click arrives.
            u.over.addEventListener('click', (e) => {
              if (pickRef.current && e.offsetX >= 0)
                pickRef.current(new Date(u.posToVal(e.offsetX, 'x') * 1000));
            });
          },
        ],
        setSize: [(u) => place(u)],
        setData: [(u) => place(u)],
      },
    };
    const u = new uPlot(opts, data, el);
    plot.current = u;
    const ro = new ResizeObserver(() => u.setSize({ width: Math.max(el.clientWidth, 200), height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
    // Rebuilt only when the series set changes; data updates go through setData below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key, height]);

  useEffect(() => {
    plot.current?.setData(data);
  }, [data]);

  // Keyed by the markers' content, not the array's identity: a caller's fresh `[]` per render
  // must not redraw (and set state) on every render.
  const markerKey = markers.map((m) => `${m.sid}@${m.startedAt}-${m.endedAt ?? ''}`).join('|');
  useEffect(() => {
    const u = plot.current;
    if (!u) return;
    u.redraw(false);
    setPositions(
      markersRef.current
        .map((m) => ({ m, left: u.valToPos(Date.parse(m.startedAt) / 1000, 'x') }))
        .filter((p) => Number.isFinite(p.left) && p.left >= 0 && p.left <= u.over.clientWidth),
    );
  }, [markerKey]);

  return (
    <figure className="chart" aria-label={title}>
      <div className="chart-plot" ref={wrap} data-testid={`chart-${title}`}>
        <div className="marker-layer">
          {positions.map((p) => (
            <button
              key={p.m.sid}
              type="button"
              className="marker-flag"
              style={{
                left: p.left + (plot.current?.over.offsetLeft ?? 0),
                borderColor: markerColor(p.m.type),
              }}
              aria-label={`${p.m.type} event ${p.m.name} at ${formatDateTime(p.m.startedAt)}`}
              data-testid="event-marker"
              onMouseEnter={() => setHover(p)}
              onMouseLeave={() => setHover(null)}
              onFocus={() => setHover(p)}
              onBlur={() => setHover(null)}
            />
          ))}
          {hover ? (
            <div
              className="marker-card"
              role="tooltip"
              style={{
                left: Math.min(
                  hover.left + (plot.current?.over.offsetLeft ?? 0),
                  (wrap.current?.clientWidth ?? 300) - 220,
                ),
              }}
            >
              <span className="badge" style={{ background: markerColor(hover.m.type) }}>
                {hover.m.type}
              </span>
              <strong>{hover.m.name}</strong>
              <span className="muted">
                {formatDateTime(hover.m.startedAt)}
                {hover.m.endedAt ? ` – ${formatDateTime(hover.m.endedAt)}` : ''}
              </span>
            </div>
          ) : null}
        </div>
      </div>
      <figcaption className="chart-caption">Times in {TIME_ZONE}</figcaption>
    </figure>
  );
}
