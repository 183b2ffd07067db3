import { useEffect, useMemo, useRef, useState } from 'react';
import uPlot, { type AlignedData, type Options } from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { useLocation } from 'wouter';
import type { MetricsEvent } from '../api/types';
import { cssVar, useTheme, type Theme } from '../lib/theme';
import { releaseHref, ReleaseVerdict } from './release-verdict';
import {
  formatDateTime,
  formatTime,
  INTERVAL_MS,
  intervalFor,
  TIME_ZONE,
  type Interval,
  type TimeRange,
} from '../lib/time';
import { useQueryState, useRange, useSharedHref } from '../lib/url-state';

export interface ChartSeries {
  label: string;
  color: string;
  values: (number | null)[];
}

export interface TimeChartProps {
  /** accessible name of the chart */
  title: string;
  /** x values in epoch milliseconds: each a bucket's start */
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
  /** click on a point: the bucket's start and the label of the series nearest the click */
  onPickPoint?: (bucketStart: Date, label: string) => void;
  /** the previous period, aligned to `x`: drawn faintly, unstacked, behind the current series */
  previous?: ChartSeries[];
  height?: number;
  /**
   * A fixed range (a release's windows, an SLO's days) instead of the URL's; dragging does not
   * zoom it. `interval` is then the length of one x step.
   */
  range?: TimeRange;
  interval?: Interval;
  /** `data`: the y axis spans the values (an SLI near 99.9%) instead of starting at zero */
  yScale?: 'zero' | 'data';
}

const MARKER_COLORS: Record<Theme, Record<string, string>> = {
  light: {
    deployment: '#1f4fd1',
    incident: '#c62828',
    config_change: '#8e44ad',
    scale: '#00897b',
    custom: '#6b7280',
  },
  dark: {
    deployment: '#7ea4ff',
    incident: '#ff7b72',
    config_change: '#c99bf0',
    scale: '#4fd1c5',
    custom: '#a3acbb',
  },
};

/** One shared empty list: a new `[]` per render would re-run the marker effect on every render. */
const NO_MARKERS: MetricsEvent[] = [];
const NO_SERIES: ChartSeries[] = [];

const INTEGER_STEPS = [
  1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 1e7, 1e8,
];

/** Pixels the pointer must move with the button down before it is a drag (zoom), not a click. */
const DRAG_PX = 6;
/** The narrowest range a drag zooms to. */
const MIN_ZOOM_MS = 60_000;

function hasIsolated(values: (number | null)[]): boolean {
  return values.some(
    (v, i) => v !== null && (values[i - 1] ?? null) === null && (values[i + 1] ?? null) === null,
  );
}

export function markerColor(type: string, theme: Theme = 'light'): string {
  return MARKER_COLORS[theme][type] ?? MARKER_COLORS[theme].custom!;
}

interface Placed {
  m: MetricsEvent;
  left: number;
}

/**
 * A uPlot time-series chart (canvas; thousands of points draw in a few ms) over the URL's time
 * range, with event markers as vertical lines (a span shaded for duration events), a flag and a
 * hover card per marker (the flags are buttons, so keyboard focus shows the card too).
 *
 * - Buckets that start after now are not drawn; the bucket now falls in is still filling up, so the
 *   chart fades it and says so in its caption.
 * - Markers outside the range are left out; a span is cut at the range's edges.
 * - Dragging across the plot zooms: the URL's range becomes the dragged one (a click still picks a
 *   time or a point where the page offers it).
 * - The charts of one page share their cursor (uPlot cursor sync).
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
  onPickPoint,
  previous = NO_SERIES,
  height = 220,
  range: fixedRange,
  interval: fixedInterval,
  yScale = 'zero',
}: TimeChartProps) {
  const wrap = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const theme = useTheme();
  const [location, navigate] = useLocation();
  const href = useSharedHref();
  const urlRange = useRange();
  const range = fixedRange ?? urlRange;
  const { set } = useQueryState();
  const [hover, setHover] = useState<Placed | null>(null);
  const [positions, setPositions] = useState<Placed[]>([]);
  const pickRef = useRef(onPickTime);
  pickRef.current = onPickTime;
  const pointRef = useRef(onPickPoint);
  pointRef.current = onPickPoint;
  const zoomRef = useRef((start: Date, end: Date) =>
    set({ range: 'custom', from: start.toISOString(), to: end.toISOString() }),
  );
  zoomRef.current = (start, end) =>
    set({ range: 'custom', from: start.toISOString(), to: end.toISOString() });

  const rangeStart = range.start.getTime();
  const rangeEnd = range.end.getTime();
  const stepLabel = fixedInterval ?? intervalFor(range);
  const step = INTERVAL_MS[stepLabel];

  // Recomputed with each data update (every 10 s on a live range): "now" moves with it.
  const view = useMemo(() => {
    const now = Date.now();
    const end = Math.max(Math.min(rangeEnd, now), rangeStart + 1);
    // Only the buckets of the range (the previous range's data stays on screen while the new one
    // loads), and never one that starts in the future (the API's range ends on the next minute).
    let lo = 0;
    while (lo < x.length && x[lo]! + step <= rangeStart) lo++;
    let hi = x.length;
    while (hi > lo && x[hi - 1]! > end) hi--;
    const xs = x.slice(lo, hi);
    const last = xs[xs.length - 1];
    const partial = last !== undefined && last + step > now ? last : null;
    return { now, lo, hi, xs, partial, axisEnd: end };
  }, [x, step, rangeStart, rangeEnd]);

  const ordered = useMemo(() => (stacked ? [...series].reverse() : series), [series, stacked]);

  const data = useMemo<AlignedData>(() => {
    const xs = view.xs.map((t) => t / 1000);
    const cut = (v: (number | null)[]) => v.slice(view.lo, view.hi);
    const prev = previous.map((s) => cut(s.values));
    if (!stacked) return [xs, ...prev, ...series.map((s) => cut(s.values))];
    // Cumulative sums, drawn from the top total down so each class covers only its own band.
    const sums: (number | null)[][] = [];
    let acc = xs.map(() => 0);
    for (const s of series) {
      const values = cut(s.values);
      acc = acc.map((a, i) => a + (values[i] ?? 0));
      sums.push([...acc]);
    }
    return [xs, ...prev, ...sums.reverse()];
  }, [view, series, stacked, previous]);

  // Markers that start or end within the range (a span across the whole range counts too).
  const visibleMarkers = useMemo(
    () =>
      markers.filter((m) => {
        const s = Date.parse(m.startedAt);
        const e = m.endedAt ? Date.parse(m.endedAt) : s;
        return e >= rangeStart && s <= view.axisEnd;
      }),
    [markers, rangeStart, view.axisEnd],
  );
  const markersRef = useRef(visibleMarkers);
  markersRef.current = visibleMarkers;
  const viewRef = useRef({ ...view, rangeStart });
  viewRef.current = { ...view, rangeStart };
  const orderedRef = useRef(ordered);
  orderedRef.current = ordered;

  const key =
    previous.map((s) => s.label + s.color).join('|') +
    '/' +
    ordered.map((s) => s.label + s.color).join('|') +
    (stacked ? ':s' : '') +
    (fixedRange ? ':f' : '') +
    yScale +
    theme;

  useEffect(() => {
    const el = wrap.current;
    if (!el) return;
    const axis = cssVar('--muted') || '#5b6170';
    const grid = cssVar('--chart-grid') || '#eef0f4';
    const tick = cssVar('--chart-tick') || '#dfe3ea';
    const fade = cssVar('--panel') || '#ffffff';
    const place = (u: uPlot) =>
      setPositions(
        markersRef.current
          .map((m) => ({
            m,
            left: u.valToPos(Math.max(Date.parse(m.startedAt), viewRef.current.rangeStart) / 1000, 'x'),
          }))
          .filter((p) => Number.isFinite(p.left) && p.left >= 0 && p.left <= u.over.clientWidth),
      );
    const previousCount = previous.length;
    const opts: Options = {
      width: Math.max(el.clientWidth, 200),
      height,
      legend: { show: true, live: true },
      cursor: {
        // Dragging selects a range to zoom to (the URL follows, see setSelect); uPlot itself does
        // not rescale. A click keeps its own meaning: `click` passes it through after a drag.
        drag: { x: !fixedRange, y: false, dist: DRAG_PX, setScale: false, click: () => undefined },
        points: { size: 6 },
        sync: { key: `chart-sync:${location}` },
        focus: { prox: 24 },
      },
      focus: { alpha: 0.5 },
      scales: {
        x: { time: true, range: () => [viewRef.current.rangeStart / 1000, viewRef.current.axisEnd / 1000] },
        y: {
          range: (_u, min, max) => {
            if (yScale === 'zero') return [Math.min(0, min), max > 0 ? max * 1.1 : 1];
            const pad = (max - min) * 0.1 || Math.abs(max) * 0.001 || 1;
            return [min - pad, max + pad];
          },
        },
      },
      axes: [
        { stroke: axis, grid: { stroke: grid }, ticks: { stroke: tick } },
        {
          stroke: axis,
          grid: { stroke: grid },
          ticks: { stroke: tick },
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
        ...previous.map((s) => ({
          label: s.label,
          stroke: s.color + '80',
          width: 1.25,
          dash: [5, 4],
          spanGaps: false,
          points: { show: false },
          value: (_u: uPlot, v: number | null) => format(v),
        })),
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
            stacked && idx !== null
              ? format(orderedRef.current[i]!.values[viewRef.current.lo + idx] ?? 0)
              : format(v),
        })),
      ],
      hooks: {
        draw: [
          (u) => {
            const ctx = u.ctx;
            const { left, top, width, height: h } = u.bbox;
            const px = uPlot.pxRatio;
            ctx.save();
            ctx.beginPath();
            ctx.rect(left, top, width, h);
            ctx.clip();
            // The bucket still filling up: faded from the point before it to the right edge, with
            // a dashed line at its start.
            const { partial, xs } = viewRef.current;
            if (partial !== null) {
              const at = u.valToPos(partial / 1000, 'x', true);
              const before = xs.length > 1 ? u.valToPos(xs[xs.length - 2]! / 1000, 'x', true) : at;
              ctx.globalAlpha = 0.6;
              ctx.fillStyle = fade;
              ctx.fillRect(before, top, left + width - before, h);
              ctx.globalAlpha = 1;
              ctx.strokeStyle = axis;
              ctx.lineWidth = px;
              ctx.setLineDash([3 * px, 3 * px]);
              ctx.beginPath();
              ctx.moveTo(at, top);
              ctx.lineTo(at, top + h);
              ctx.stroke();
            }
            for (const m of markersRef.current) {
              const x0 = u.valToPos(Date.parse(m.startedAt) / 1000, 'x', true);
              const color = markerColor(m.type, theme);
              if (m.endedAt) {
                const x1 = u.valToPos(Date.parse(m.endedAt) / 1000, 'x', true);
                ctx.fillStyle = color + '1f';
                ctx.fillRect(x0, top, Math.max(x1 - x0, 1), h);
              }
              ctx.strokeStyle = color;
              ctx.lineWidth = 2 * px;
              ctx.setLineDash([6 * px, 4 * px]);
              ctx.beginPath();
              ctx.moveTo(x0, top);
              ctx.lineTo(x0, top + h);
              ctx.stroke();
            }
            // A value standing alone between gaps has no line to show it: a dot on top of the
            // faded band and the markers, ringed in the panel's colour. So does a value whose only
            // neighbour is the bucket still filling up: its one segment lies inside the faded band
            // (on a wide range a few pixels, often under a marker). Series that share a dot's
            // place (a single day's SLI and the window so far) draw smaller dots inside it.
            if (!stacked) {
              ctx.setLineDash([]);
              const drawn = new Map<string, number>();
              orderedRef.current.forEach((s, i) => {
                const si = 1 + previousCount + i;
                const values = u.data[si];
                if (!values || !u.series[si]?.show) return;
                const filling = partial !== null ? values.length - 1 : -1;
                values.forEach((v, k) => {
                  if (v == null || values[k - 1] != null || (values[k + 1] != null && k + 1 !== filling))
                    return;
                  const cx = u.valToPos(u.data[0][k]!, 'x', true);
                  const cy = u.valToPos(v, 'y', true);
                  const at = `${Math.round(cx)},${Math.round(cy)}`;
                  const under = drawn.get(at) ?? 0;
                  drawn.set(at, under + 1);
                  ctx.beginPath();
                  ctx.arc(cx, cy, Math.max(4, 7.5 - 3.5 * under) * px, 0, 2 * Math.PI);
                  ctx.fillStyle = s.color;
                  ctx.fill();
                  ctx.strokeStyle = fade;
                  ctx.lineWidth = 1.5 * px;
                  ctx.stroke();
                });
              });
            }
            ctx.restore();
          },
        ],
        setSelect: [
          (u) => {
            const { left, width } = u.select;
            if (width >= DRAG_PX) {
              let s = u.posToVal(left, 'x') * 1000;
              let e = u.posToVal(left + width, 'x') * 1000;
              if (e - s < MIN_ZOOM_MS) {
                const mid = (s + e) / 2;
                s = mid - MIN_ZOOM_MS / 2;
                e = mid + MIN_ZOOM_MS / 2;
              }
              zoomRef.current(new Date(Math.floor(s / 1000) * 1000), new Date(Math.ceil(e / 1000) * 1000));
            }
            u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
          },
        ],
        ready: [
          (u) => {
            place(u);
            // The click's own position: uPlot moves its cursor on the next frame, so
            // `u.cursor.left` can still hold the previous position when a click arrives. A click
            // that ends a drag is the zoom, not a pick.
            let downX = 0;
            u.over.addEventListener('mousedown', (e) => {
              downX = e.clientX;
            });
            u.over.addEventListener('click', (e) => {
              if (Math.abs(e.clientX - downX) >= DRAG_PX || e.offsetX < 0) return;
              if (pointRef.current) {
                const idx = u.posToIdx(e.offsetX);
                const t = u.data[0][idx];
                if (t === undefined) return;
                // The series whose point at that time is nearest the click, vertically.
                let best = -1;
                let dist = Infinity;
                orderedRef.current.forEach((_s, i) => {
                  const v = u.data[1 + previousCount + i]?.[idx];
                  if (v == null) return;
                  const d = Math.abs(u.valToPos(v, 'y') - e.offsetY);
                  if (d < dist) [best, dist] = [i, d];
                });
                const s = orderedRef.current[best];
                if (s) pointRef.current(new Date(t * 1000), s.label);
              } else if (pickRef.current) pickRef.current(new Date(u.posToVal(e.offsetX, 'x') * 1000));
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
    // Rebuilt only when the series set, the theme or the page changes; data updates go through
    // setData below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key, height, location]);

  useEffect(() => {
    plot.current?.setData(data);
  }, [data]);

  // Keyed by the markers' content, not the array's identity: a caller's fresh `[]` per render
  // must not redraw (and set state) on every render.
  const markerKey =
    visibleMarkers.map((m) => `${m.sid}@${m.startedAt}-${m.endedAt ?? ''}`).join('|') +
    `/${rangeStart}-${view.axisEnd}`;
  useEffect(() => {
    const u = plot.current;
    if (!u) return;
    // The x range follows the URL (and the clock on a live range).
    u.setScale('x', { min: rangeStart / 1000, max: view.axisEnd / 1000 });
    setPositions(
      markersRef.current
        .map((m) => ({
          m,
          left: u.valToPos(Math.max(Date.parse(m.startedAt), rangeStart) / 1000, 'x'),
        }))
        .filter((p) => Number.isFinite(p.left) && p.left >= 0 && p.left <= u.over.clientWidth),
    );
  }, [markerKey, rangeStart, view.axisEnd]);

  return (
    <figure className={`chart${onPickPoint ? ' chart-clickable' : ''}`} aria-label={title}>
      <div
        className="chart-plot"
        ref={wrap}
        data-testid={`chart-${title}`}
        data-last-bucket={view.xs.length ? new Date(view.xs[view.xs.length - 1]!).toISOString() : undefined}
        data-partial-bucket={view.partial !== null ? new Date(view.partial).toISOString() : undefined}
      >
        <div className="marker-layer">
          {positions.map((p) => (
            <button
              key={p.m.sid}
              type="button"
              className="marker-flag"
              style={{
                left: p.left + (plot.current?.over.offsetLeft ?? 0),
                borderColor: markerColor(p.m.type, theme),
              }}
              aria-label={`${p.m.type} event ${p.m.name} at ${formatDateTime(p.m.startedAt)}`}
              data-testid="event-marker"
              onClick={p.m.type === 'deployment' ? () => navigate(href(releaseHref(p.m.sid))) : undefined}
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
                left: Math.max(
                  0,
                  Math.min(
                    hover.left + (plot.current?.over.offsetLeft ?? 0),
                    (wrap.current?.clientWidth ?? 300) - 220,
                  ),
                ),
              }}
            >
              {/* The light palette behind the badge's white text, in either theme. */}
              <span className="badge" style={{ background: markerColor(hover.m.type) }}>
                {hover.m.type}
              </span>
              <strong>{hover.m.name}</strong>
              <span className="muted">
                {formatDateTime(hover.m.startedAt)}
                {hover.m.endedAt ? ` – ${formatDateTime(hover.m.endedAt)}` : ''}
              </span>
              {hover.m.type === 'deployment' ? (
                <>
                  <ReleaseVerdict eventSid={hover.m.sid} />
                  <span className="muted small">Click the marker for the release page</span>
                </>
              ) : null}
            </div>
          ) : null}
        </div>
      </div>
      <figcaption className="chart-caption">
        Times in {TIME_ZONE}
        {view.partial !== null ? (
          <span data-testid="partial-note">
            {' '}
            · the {stepLabel} since {formatTime(view.partial)} is still in progress (faded)
          </span>
        ) : null}
        {fixedRange ? null : <span className="hide-narrow"> · drag across the chart to zoom in</span>}
      </figcaption>
    </figure>
  );
}
