import type { ClickHouseClient } from '../shared/clickhouse.js';
import { HIST_GRID } from '../shared/metrics-sql.js';
import { TABLES } from '../shared/tables.js';
import type { WindowCounts } from './slo-math.js';

/** What an SLO counts: its scope and its SLI. */
export interface SloDefinition {
  accountSid: string;
  bucketSid: string;
  environmentSid: string | null;
  endpoint: string | null;
  method: string | null;
  sli: { kind: 'availability' } | { kind: 'latency'; thresholdMs: number };
}

/** Counts of one UTC day of the window. */
export interface DayCounts extends WindowCounts {
  day: string;
}

export interface SloCounts {
  /** the whole SLO window */
  window: WindowCounts;
  days: DayCounts[];
  /** per requested burn window (seconds) */
  burn: Map<number, WindowCounts>;
}

/**
 * The grid index at or below which a duration counts as under `thresholdMs`. Durations are stored
 * per index round(log2(ms) * HIST_GRID), so an index holds durations within a factor
 * 2^(1/(2 HIST_GRID)) of its value: every call at or under the threshold is counted good, and the
 * only calls counted good that were slower are those within 2^(1/(2 HIST_GRID)) - 1 (0.7%) above
 * it (docs/slos.md "Latency SLI").
 */
export function thresholdIndex(thresholdMs: number): number {
  return Math.round(Math.log2(thresholdMs) * HIST_GRID);
}

/**
 * Good and total events of one SLO from the per-minute aggregates (`requests_minute`, never raw
 * rows), in one query: per UTC day of the window, and per burn window ending at `now`.
 * Availability: every answer counts, a 5xx is bad. Latency: every call with a duration counts, one
 * slower than the threshold is bad; the good count of each row is read from its duration histogram
 * (a per-row sum is exact: partial rows and deletions' negative counts add up).
 * Rows without an environment count in every environment (as for threshold triggers).
 */
export async function sloCounts(
  ch: ClickHouseClient,
  slo: SloDefinition,
  windowDays: number,
  burnWindows: readonly number[],
  now: Date,
): Promise<SloCounts> {
  const until = Math.floor(now.getTime() / 60_000) * 60;
  const since = Math.floor(until / 86_400) * 86_400 - (windowDays - 1) * 86_400;
  const latency = slo.sli.kind === 'latency';
  const total = latency ? 'duration_count' : 'requests';
  const bad = latency
    ? `(duration_count - arraySum(mapValues(mapFilter((k, v) -> k = -32768 OR k <= {thr:Int32}, duration_hist))))`
    : 'if(status_code >= 500, requests, 0)';
  const windowCols = burnWindows
    .map(
      (w, i) =>
        `sumIf(${total}, minute >= toDateTime({w${i}:UInt32}, 'UTC')) AS t${i},
         sumIf(${bad}, minute >= toDateTime({w${i}:UInt32}, 'UTC')) AS b${i}`,
    )
    .join(',\n');
  const params: Record<string, unknown> = {
    account: slo.accountSid,
    bucket: slo.bucketSid,
    since: Math.min(since, until - Math.max(0, ...burnWindows)),
    until,
    windowStart: since,
  };
  burnWindows.forEach((w, i) => (params[`w${i}`] = until - w + 60));
  if (slo.sli.kind === 'latency') params.thr = thresholdIndex(slo.sli.thresholdMs);
  const filters: string[] = [];
  if (slo.environmentSid) {
    filters.push(`environment_sid IN ('', {env:String})`);
    params.env = slo.environmentSid;
  }
  if (slo.endpoint) {
    filters.push('endpoint = {endpoint:String}');
    params.endpoint = slo.endpoint;
  }
  if (slo.method) {
    filters.push('method = {method:String}');
    params.method = slo.method;
  }
  const rs = await ch.query({
    query: `SELECT toUInt32(toStartOfDay(minute)) AS day,
        sumIf(${total}, minute >= toDateTime({windowStart:UInt32}, 'UTC')) AS total,
        sumIf(${bad}, minute >= toDateTime({windowStart:UInt32}, 'UTC')) AS bad
        ${windowCols ? `,\n${windowCols}` : ''}
      FROM ${TABLES.requestsMinute}
      WHERE account_sid = {account:String} AND bucket_sid = {bucket:String}
        AND minute >= toDateTime({since:UInt32}, 'UTC') AND minute <= toDateTime({until:UInt32}, 'UTC')
        ${filters.map((f) => `AND ${f}`).join(' ')}
      GROUP BY day ORDER BY day`,
    query_params: params,
    format: 'JSONEachRow',
  });
  const rows = await rs.json<Record<string, unknown>>();
  const byDay = new Map<number, WindowCounts>();
  const burn = new Map<number, WindowCounts>(burnWindows.map((w) => [w, { total: 0, bad: 0 }]));
  for (const row of rows) {
    byDay.set(Number(row.day), { total: Number(row.total), bad: Number(row.bad) });
    burnWindows.forEach((w, i) => {
      const c = burn.get(w)!;
      c.total += Number(row[`t${i}`]);
      c.bad += Number(row[`b${i}`]);
    });
  }
  const days: DayCounts[] = [];
  const window: WindowCounts = { total: 0, bad: 0 };
  for (let d = since; d <= until; d += 86_400) {
    const c = byDay.get(d) ?? { total: 0, bad: 0 };
    days.push({ day: new Date(d * 1000).toISOString().slice(0, 10), ...c });
    window.total += c.total;
    window.bad += c.bad;
  }
  return { window, days, burn };
}
