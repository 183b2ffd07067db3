import type { ClickHouseClient } from '../shared/clickhouse.js';
import { MERGE } from '../shared/metrics-sql.js';
import { TABLES } from '../shared/tables.js';
import type { WindowMetrics } from './threshold.evaluator.js';

/** One bucket and environment of one account: what a threshold workflow watches. */
export interface Scope {
  accountSid: string;
  bucketSid: string;
  environmentSid: string;
}

export const scopeKey = (s: Scope): string => `${s.accountSid}|${s.bucketSid}|${s.environmentSid}`;

const CHUNK = 500;
const EMPTY: WindowMetrics = { requests: 0, error_rate: null, avg_response_time: null, response_time: null };

/**
 * The three threshold metrics of many scopes over one window, from the per-minute aggregates
 * (never raw rows), in one query per 500 scopes. The window covers the minute buckets that start
 * at or after (slot - window) rounded down to the minute, up to the slot's minute (partial).
 * `response_time` is the p95, merged from the quantile states (docs/workflows.md).
 * Rows without an environment (records sent without one, e.g. by the existing SDKs) count in
 * every watched environment of their bucket: the ARRAY JOIN gives such a row once per scope key
 * of its own bucket (`account|bucket|env`, the env taken from the key), so it is never multiplied
 * by the environments of other buckets in the chunk.
 */
export async function windowMetrics(
  ch: ClickHouseClient,
  scopes: readonly Scope[],
  windowSeconds: number,
  slot: Date,
): Promise<Map<string, WindowMetrics>> {
  const until = Math.floor(slot.getTime() / 1000);
  const out = new Map<string, WindowMetrics>();
  for (let i = 0; i < scopes.length; i += CHUNK) {
    const part = scopes.slice(i, i + CHUNK);
    const rs = await ch.query({
      query: `SELECT account_sid, bucket_sid, scope_env, ${WINDOW_COLUMNS}
        FROM ${TABLES.requestsMinute}
        ARRAY JOIN if(environment_sid = '',
          arrayMap(k -> splitByChar('|', k)[3],
            arrayFilter(k -> startsWith(k, concat(account_sid, '|', bucket_sid, '|')), {keys:Array(String)})),
          [toString(environment_sid)]) AS scope_env
        WHERE account_sid IN {accounts:Array(String)}
          AND bucket_sid IN {buckets:Array(String)}
          AND has({keys:Array(String)}, concat(account_sid, '|', bucket_sid, '|', scope_env))
          AND minute >= toStartOfMinute(toDateTime({since:UInt32}, 'UTC'))
          AND minute <= toDateTime({until:UInt32}, 'UTC')
        GROUP BY account_sid, bucket_sid, scope_env`,
      query_params: {
        accounts: [...new Set(part.map((s) => s.accountSid))],
        buckets: [...new Set(part.map((s) => s.bucketSid))],
        keys: part.map(scopeKey),
        since: until - windowSeconds,
        until,
      },
      format: 'JSONEachRow',
    });
    for (const row of await rs.json<Record<string, unknown>>()) {
      const key = scopeKey({
        accountSid: String(row.account_sid),
        bucketSid: String(row.bucket_sid),
        environmentSid: String(row.scope_env),
      });
      out.set(key, windowMetricsOf(row));
    }
  }
  for (const s of scopes) if (!out.has(scopeKey(s))) out.set(scopeKey(s), EMPTY);
  return out;
}

/**
 * The merged columns both window queries select. NOTE: aliases must not reuse a column name:
 * ClickHouse would resolve `requests` inside the other MERGE expressions to the alias and refuse an
 * aggregate inside an aggregate.
 */
const WINDOW_COLUMNS = `${MERGE.requests} AS n_requests, ${MERGE.errorRate} AS error_rate,
  ${MERGE.avg} AS avg_response_time, ${MERGE.durationCount} AS n_durations, ${MERGE.p95} AS p95`;

/** A row of WINDOW_COLUMNS as the evaluator reads it: no rate or time without requests or durations. */
function windowMetricsOf(row: Record<string, unknown>): WindowMetrics {
  const requests = num(row.n_requests) ?? 0;
  const durations = num(row.n_durations) ?? 0;
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

/**
 * Per-consumer threshold triggers (docs/consumers.md): the three metrics of every consumer of one
 * scope over one window, from the consumers' minute rows (rows without an environment count in every
 * environment, as above; a workflow for `*` watches every environment), with the latest name and
 * group the consumer's records carried.
 */
export async function consumerWindowMetrics(
  ch: ClickHouseClient,
  scope: Scope,
  windowSeconds: number,
  slot: Date,
): Promise<Map<string, WindowMetrics & { name: string | null; group: string | null }>> {
  const until = Math.floor(slot.getTime() / 1000);
  const rs = await ch.query({
    query: `SELECT m.consumer_id AS cid, m.n_requests, m.error_rate, m.avg_response_time, m.n_durations, m.p95,
        l.name AS name, l.grp AS grp
      FROM (
        SELECT consumer_id, ${WINDOW_COLUMNS}
        FROM ${TABLES.consumersMinute}
        WHERE account_sid = {a:String} AND bucket_sid = {b:String}
          AND ({e:String} = '*' OR environment_sid = {e:String} OR environment_sid = '')
          AND minute >= toStartOfMinute(toDateTime({since:UInt32}, 'UTC'))
          AND minute <= toDateTime({until:UInt32}, 'UTC')
        GROUP BY consumer_id
      ) AS m
      LEFT JOIN (
        SELECT consumer_id, argMaxMerge(name) AS name, argMaxMerge(grp) AS grp
        FROM ${TABLES.consumerLabels}
        WHERE account_sid = {a:String} AND bucket_sid = {b:String}
        GROUP BY consumer_id
      ) AS l ON l.consumer_id = m.consumer_id
      SETTINGS join_use_nulls = 0`,
    query_params: {
      a: scope.accountSid,
      b: scope.bucketSid,
      e: scope.environmentSid,
      since: until - windowSeconds,
      until,
    },
    format: 'JSONEachRow',
  });
  const out = new Map<string, WindowMetrics & { name: string | null; group: string | null }>();
  for (const row of await rs.json<Record<string, unknown>>()) {
    out.set(String(row.cid), {
      ...windowMetricsOf(row),
      name: typeof row.name === 'string' && row.name !== '' ? row.name : null,
      group: typeof row.grp === 'string' && row.grp !== '' ? row.grp : null,
    });
  }
  return out;
}
