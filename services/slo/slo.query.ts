import type { ClickHouseClient } from '../shared/clickhouse.js';
import { ClickHouseWhere } from '../shared/clickhouse-where.js';
import { HIST_GRID } from '../shared/metrics-sql.js';
import { TABLES } from '../shared/tables.js';
import { segmentsOf } from '../api/metrics/metrics-queries.js';
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

/** Block lengths (minutes) read: day and hour blocks of requests_key_rollup, single minutes. */
const LEVELS = [1440, 60, 1] as const;

/** A span of minutes [from, to] (epoch seconds, minute aligned, inclusive) as its blocks' keys. */
function blockKeys(from: number, to: number): string[] {
  const keys: string[] = [];
  for (const seg of segmentsOf(from, to, 1440, LEVELS))
    for (let t = seg.from; t <= seg.to; t += seg.level * 60) keys.push(`${seg.level}:${t}`);
  return keys;
}

/**
 * The condition selecting every block of `level` among `keys`, as runs of consecutive blocks
 * (`col` between their first and last start), with their bounds added to `params`.
 */
function runsOf(level: number, starts: number[], col: string, params: Record<string, unknown>): string[] {
  const sorted = [...new Set(starts)].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + level * 60) j++;
    const k = Object.keys(params).length;
    params[`r${k}a`] = sorted[i];
    params[`r${k}b`] = sorted[j];
    out.push(`${col} >= toDateTime({r${k}a:UInt32}, 'UTC') AND ${col} <= toDateTime({r${k}b:UInt32}, 'UTC')`);
    i = j + 1;
  }
  return out;
}

/**
 * Good and total events of one SLO, from aggregates only (never raw rows), in one query: per UTC
 * day of the window, and per burn window ending at `now`. Every span (a day, a window) is covered
 * by the largest whole blocks inside it: days and hours of `requests_key_rollup`
 * (008_consumer_and_key_rollups.sql, requests_minute summed per block with its whole key) and
 * single minutes of `requests_minute` at the edges, so a 30-day series reads 30 day rows per key
 * instead of 43,200 minute rows, and the 5-minute to 1-hour windows read minutes only. The query
 * sums each block once (spans share blocks) and the spans are added up here; a block is the sum of
 * its minutes, so the counts are those of the minute rows.
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
  const dayStarts: number[] = [];
  for (let d = since; d <= until; d += 86_400) dayStarts.push(d);
  const daySpans = dayStarts.map((d) => blockKeys(d, Math.min(d + 86_400 - 60, until)));
  const windowSpans = burnWindows.map((w) => blockKeys(until - w + 60, until));
  const byLevel = new Map<number, number[]>();
  for (const key of [...daySpans, ...windowSpans].flat()) {
    const [level, t] = key.split(':').map(Number) as [number, number];
    byLevel.set(level, [...(byLevel.get(level) ?? []), t]);
  }

  // `thr`: the latency threshold's histogram index, named by the `bad` column, not by a condition.
  const where = new ClickHouseWhere(
    slo.sli.kind === 'latency' ? { thr: thresholdIndex(slo.sli.thresholdMs) } : {},
  )
    .and('account_sid = {account:String}', { account: slo.accountSid })
    .and('bucket_sid = {bucket:String}', { bucket: slo.bucketSid });
  if (slo.environmentSid) where.and(`environment_sid IN ('', {env:String})`, { env: slo.environmentSid });
  if (slo.endpoint) where.and('endpoint = {endpoint:String}', { endpoint: slo.endpoint });
  if (slo.method) where.and('method = {method:String}', { method: slo.method });
  const { params } = where;
  const filters = where.sql();
  const blocks: string[] = [];
  for (const [level, starts] of byLevel) {
    if (level === 1) continue;
    for (const run of runsOf(level, starts, 't', params)) blocks.push(`(level = ${level} AND ${run})`);
  }
  const minutes = runsOf(1, byLevel.get(1) ?? [], 'minute', params).map((r) => `(${r})`);
  const parts: string[] = [];
  if (blocks.length)
    parts.push(`SELECT level AS lv, toUInt32(t) AS b, ${total} AS n, ${bad} AS x
      FROM ${TABLES.requestsKeyRollup}
      WHERE ${filters} AND (${blocks.join(' OR ')})`);
  if (minutes.length || !blocks.length)
    parts.push(`SELECT toUInt16(1) AS lv, toUInt32(minute) AS b, ${total} AS n, ${bad} AS x
      FROM ${TABLES.requestsMinute}
      WHERE ${filters} AND (${minutes.join(' OR ') || '0'})`);
  const rs = await ch.query({
    query: `SELECT lv, b, sum(n) AS total, sum(x) AS bad
      FROM (${parts.join('\n      UNION ALL ')})
      GROUP BY lv, b
      SETTINGS optimize_use_implicit_projections = 0`,
    query_params: params,
    format: 'JSONEachRow',
  });
  const sums = new Map<string, WindowCounts>();
  for (const row of await rs.json<{ lv: number; b: number; total: number | string; bad: number | string }>())
    sums.set(`${row.lv}:${row.b}`, { total: Number(row.total), bad: Number(row.bad) });
  const add = (keys: string[]): WindowCounts => {
    const c: WindowCounts = { total: 0, bad: 0 };
    for (const k of keys) {
      const v = sums.get(k);
      if (v) {
        c.total += v.total;
        c.bad += v.bad;
      }
    }
    return c;
  };

  const days: DayCounts[] = [];
  const window: WindowCounts = { total: 0, bad: 0 };
  daySpans.forEach((keys, i) => {
    const c = add(keys);
    days.push({ day: new Date(dayStarts[i]! * 1000).toISOString().slice(0, 10), ...c });
    window.total += c.total;
    window.bad += c.bad;
  });
  const burn = new Map<number, WindowCounts>(burnWindows.map((w, i) => [w, add(windowSpans[i]!)]));
  return { window, days, burn };
}

/** The minutes [from, to] as its blocks' segments, in a condition on a row's `lv` and `b`. */
function spanCondition(from: number, to: number): string {
  return segmentsOf(from, to, 1440, LEVELS)
    .map((seg) => `(lv = ${seg.level} AND b >= ${seg.from} AND b <= ${seg.to})`)
    .join(' OR ');
}

/**
 * The burn-window counts of several SLOs of ONE bucket at `now`, in one query (the scheduler's
 * minute, services/scheduler/slo-burn.evaluator.ts): the bucket's rows of every window are read
 * once, as in sloCounts (hour and day blocks of requests_key_rollup, edge minutes of
 * requests_minute), and summed per environment, method and endpoint and per window, with the bad
 * count of every latency threshold asked for; each SLO's counts are then added up here from the
 * groups its definition selects. The same sums as sloCounts gives each SLO on its own.
 */
export async function sloBurnCounts(
  ch: ClickHouseClient,
  slos: readonly (SloDefinition & { sid: string })[],
  burnWindows: readonly number[],
  now: Date,
): Promise<Map<string, Map<number, WindowCounts>>> {
  const out = new Map<string, Map<number, WindowCounts>>();
  const first = slos[0];
  if (!first || burnWindows.length === 0) return out;
  if (slos.some((s) => s.accountSid !== first.accountSid || s.bucketSid !== first.bucketSid))
    throw new Error('sloBurnCounts takes the SLOs of one bucket');
  const until = Math.floor(now.getTime() / 60_000) * 60;
  const spans = burnWindows.map((w) => ({ from: until - w + 60, to: until }));
  const byLevel = new Map<number, number[]>();
  for (const s of spans)
    for (const key of blockKeys(s.from, s.to)) {
      const [level, t] = key.split(':').map(Number) as [number, number];
      byLevel.set(level, [...(byLevel.get(level) ?? []), t]);
    }
  const params: Record<string, unknown> = { account: first.accountSid, bucket: first.bucketSid };
  const filters = 'account_sid = {account:String} AND bucket_sid = {bucket:String}';
  const blocks: string[] = [];
  for (const [level, starts] of byLevel) {
    if (level === 1) continue;
    for (const run of runsOf(level, starts, 't', params)) blocks.push(`(level = ${level} AND ${run})`);
  }
  const minutes = runsOf(1, byLevel.get(1) ?? [], 'minute', params).map((r) => `(${r})`);
  const cols = 'environment_sid, method, endpoint, status_code, requests, duration_count, duration_hist';
  const parts: string[] = [];
  if (blocks.length)
    parts.push(`SELECT level AS lv, toUInt32(t) AS b, ${cols} FROM ${TABLES.requestsKeyRollup}
      WHERE ${filters} AND (${blocks.join(' OR ')})`);
  if (minutes.length || !blocks.length)
    parts.push(`SELECT toUInt16(1) AS lv, toUInt32(minute) AS b, ${cols} FROM ${TABLES.requestsMinute}
      WHERE ${filters} AND (${minutes.join(' OR ') || '0'})`);
  const thresholds = [
    ...new Set(slos.flatMap((s) => (s.sli.kind === 'latency' ? [thresholdIndex(s.sli.thresholdMs)] : []))),
  ];
  const sums = spans.flatMap((s, i) => {
    const c = spanCondition(s.from, s.to);
    return [
      `sumIf(requests, ${c}) AS n${i}`,
      `sumIf(if(status_code >= 500, requests, 0), ${c}) AS e${i}`,
      `sumIf(duration_count, ${c}) AS d${i}`,
      ...thresholds.map(
        (thr, j) =>
          `sumIf(duration_count - arraySum(mapValues(mapFilter((k, v) -> k = -32768 OR k <= ${thr}, duration_hist))), ${c}) AS l${i}_${j}`,
      ),
    ];
  });
  const rs = await ch.query({
    query: `SELECT toString(environment_sid) AS env, toString(method) AS mt, endpoint AS ep, ${sums.join(', ')}
      FROM (${parts.join('\n      UNION ALL ')})
      GROUP BY environment_sid, method, endpoint
      SETTINGS optimize_use_implicit_projections = 0`,
    query_params: params,
    format: 'JSONEachRow',
  });
  const groups = await rs.json<Record<string, string | number>>();
  for (const slo of slos) {
    const mine = groups.filter(
      (g) =>
        (!slo.environmentSid || g.env === '' || g.env === slo.environmentSid) &&
        (!slo.endpoint || g.ep === slo.endpoint) &&
        (!slo.method || g.mt === slo.method),
    );
    const j = slo.sli.kind === 'latency' ? thresholds.indexOf(thresholdIndex(slo.sli.thresholdMs)) : -1;
    const counts = new Map<number, WindowCounts>();
    burnWindows.forEach((w, i) => {
      const c: WindowCounts = { total: 0, bad: 0 };
      for (const g of mine) {
        c.total += Number(j >= 0 ? g[`d${i}`] : g[`n${i}`]);
        c.bad += Number(j >= 0 ? g[`l${i}_${j}`] : g[`e${i}`]);
      }
      counts.set(w, c);
    });
    out.set(slo.sid, counts);
  }
  return out;
}
