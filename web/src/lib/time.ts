/**
 * Time ranges of the dashboard: a preset (`15m`, `1h`, `24h`, `7d`, `30d`) ending now, or a custom
 * `from`/`to` pair. The metrics interval follows the range so a chart has a readable number of
 * points (the API's intervals: minute, hour, day).
 */
export const PRESETS = [
  { id: '15m', label: 'Last 15 minutes', ms: 15 * 60_000 },
  { id: '1h', label: 'Last hour', ms: 3_600_000 },
  { id: '24h', label: 'Last 24 hours', ms: 86_400_000 },
  { id: '7d', label: 'Last 7 days', ms: 7 * 86_400_000 },
  { id: '30d', label: 'Last 30 days', ms: 30 * 86_400_000 },
] as const;

export interface TimeRange {
  /** preset id, or 'custom' */
  id: string;
  start: Date;
  end: Date;
  /** the range ends now: panels refresh themselves */
  live: boolean;
}

export function resolveRange(
  range: string | null,
  from: string | null,
  to: string | null,
  now = Date.now(),
): TimeRange {
  if (range === 'custom' && from && to) {
    const s = Date.parse(from);
    const e = Date.parse(to);
    if (Number.isFinite(s) && Number.isFinite(e) && s < e)
      return { id: 'custom', start: new Date(s), end: new Date(e), live: false };
  }
  const preset = PRESETS.find((p) => p.id === range) ?? PRESETS[2];
  // Minute-aligned "now" keeps query keys stable between renders within the same minute.
  const end = Math.ceil(now / 60_000) * 60_000;
  return { id: preset.id, start: new Date(end - preset.ms), end: new Date(end), live: true };
}

/** The API's metrics intervals. */
export type Interval = 'minute' | 'hour' | 'day';

export function intervalFor(r: TimeRange): Interval {
  const span = r.end.getTime() - r.start.getTime();
  if (span <= 6 * 3_600_000) return 'minute';
  if (span <= 8 * 86_400_000) return 'hour';
  return 'day';
}

/** Length of one metrics bucket of each interval. */
export const INTERVAL_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

/** The browser's time zone, shown beside every time axis. */
export const TIME_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

const dateTime = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
});
const timeOnly = new Intl.DateTimeFormat(undefined, {
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
});

const dayOnly = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });

/** The day, e.g. "Nov 28" (the stream shows it once its rows span days). */
export function formatDay(iso: string | number | Date): string {
  return dayOnly.format(new Date(iso));
}

/** The calendar day in the browser's zone, as a comparable key. */
export function localDay(iso: string | number | Date): string {
  const d = new Date(iso);
  return `${d.getFullYear()}-${d.getMonth()}-${d.getDate()}`;
}

export function formatDateTime(iso: string | number | Date): string {
  return dateTime.format(new Date(iso));
}

export function formatTime(iso: string | number | Date): string {
  return timeOnly.format(new Date(iso));
}

/** Value for an `<input type="datetime-local">` in the browser's zone. */
export function toLocalInput(d: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function relative(iso: string, now = Date.now()): string {
  const s = Math.round((now - Date.parse(iso)) / 1000);
  if (s < 60) return `${Math.max(s, 0)}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}
