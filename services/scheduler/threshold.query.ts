import type { ClickHouseClient } from '../shared/clickhouse.js';
import { MERGE } from '../shared/metrics-sql.js';
import { TABLES } from '../shared/tables.js';
import type { WindowMetrics } from './threshold.evaluator.js';

export interface WindowKey {
  accountSid: string;
  bucketSid: string;
  environmentSid: string;
  windowSeconds: number;
}

/**
 * The three threshold metrics of one bucket and environment over a window, from the per-minute
 * aggregates (never raw rows). The window covers the minute buckets that start at or after
 * (slot - window) rounded down to the minute, up to the slot's minute (which is partial).
 * `response_time` is the p95, merged from the DDSketch states (docs/workflows.md).
 */
export async function windowMetrics(
  ch: ClickHouseClient,
  key: WindowKey,
  slot: Date,
): Promise<WindowMetrics> {
  const until = Math.floor(slot.getTime() / 1000);
  const rs = await ch.query({
    query: `SELECT
        ${MERGE.requests} AS requests,
        ${MERGE.errorRate} AS error_rate,
        ${MERGE.avg} AS avg_response_time,
        ${MERGE.durationCount} AS duration_count,
        ${MERGE.p95} AS p95
      FROM ${TABLES.requestsMinute}
      WHERE account_sid = {account:String}
        AND bucket_sid = {bucket:String}
        AND environment_sid = {environment:String}
        AND minute >= toStartOfMinute(toDateTime({since:UInt32}, 'UTC'))
        AND minute <= toDateTime({until:UInt32}, 'UTC')`,
    query_params: {
      account: key.accountSid,
      bucket: key.bucketSid,
      environment: key.environmentSid,
      since: until - key.windowSeconds,
      until,
    },
    format: 'JSONEachRow',
  });
  const row = (await rs.json<Record<string, unknown>>())[0] ?? {};
  const requests = num(row.requests) ?? 0;
  const durations = num(row.duration_count) ?? 0;
  return {
    requests,
    error_rate: requests > 0 ? num(row.error_rate) : null,
    avg_response_time: durations > 0 ? num(row.avg_response_time) : null,
    response_time: durations > 0 ? num(row.p95) : null,
  };
}

function num(v: unknown): number | null {
  if (v === null || v === undefined) return null;
  const n = typeof v === 'number' ? v : Number(v);
  return Number.isFinite(n) ? n : null;
}
