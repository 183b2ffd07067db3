import type pg from 'pg';
import { EventsRepository, type EventMarker } from '../api/events.repository.js';
import type { ClickHouseClient } from '../shared/clickhouse.js';
import { validation } from '../shared/errors.js';
import { HIST_GRID } from '../shared/metrics-sql.js';
import { TABLES } from '../shared/tables.js';
import {
  bySeverity,
  compareWindows,
  type Comparison,
  type Verdict,
  type WindowSample,
} from './impact-rule.js';

/** Window lengths in minutes (docs/releases.md "Windows"). */
export interface ImpactWindows {
  beforeMinutes: number;
  afterMinutes: number;
  settleMinutes: number;
}

export const DEFAULT_WINDOWS: ImpactWindows = { beforeMinutes: 30, afterMinutes: 30, settleMinutes: 2 };

export interface EndpointImpact extends Comparison {
  endpoint: string;
  method: string;
}

export interface ReleaseImpact {
  eventSid: string;
  status: 'pending' | 'ready';
  window: {
    before: { from: string; to: string };
    after: { from: string; to: string };
    settleMinutes: number;
    shortenedBy: string[];
  };
  summary: Record<Verdict, number>;
  endpoints: EndpointImpact[];
}

/**
 * Narrows the analysis: to some buckets (a regression workflow's, an MCP token's list) and one
 * environment. Only buckets the event is shown on are read.
 */
export interface ImpactScope {
  bucketSids?: string[];
  environmentSid: string;
}

const MINUTE = 60_000;
const toMs = (index: number): number => (index === -32768 ? 0 : 2 ** (index / HIST_GRID));

/**
 * The impact of one deployment event: per endpoint and method, the before window against the after
 * window, from the per-minute aggregates. Windows are whole minutes: before = the `beforeMinutes`
 * minutes before the marker's minute, after = `afterMinutes` minutes starting `settleMinutes` after
 * the minute following the marker. Another deployment on an overlapping set of buckets inside a
 * window shortens it: the after window ends at the next deployment's minute, the before window
 * starts no earlier than the previous deployment's after window would (its minute + settle).
 */
export class ImpactService {
  private readonly events: EventsRepository;

  constructor(
    private readonly pg: pg.Pool,
    private readonly ch: ClickHouseClient,
  ) {
    this.events = new EventsRepository(pg);
  }

  async impact(
    accountSid: string,
    eventSid: string,
    windows: ImpactWindows = DEFAULT_WINDOWS,
    scope?: ImpactScope,
    now = new Date(),
  ): Promise<ReleaseImpact> {
    const event = await this.events.get(accountSid, eventSid);
    if (event.type !== 'deployment')
      throw validation('Impact is analysed for deployment events only', {
        eventSid: `is a ${event.type} event, not a deployment`,
      });
    return this.analyse(event, windows, scope, now);
  }

  async analyse(
    event: EventMarker,
    windows: ImpactWindows,
    scope: ImpactScope | undefined,
    now: Date,
  ): Promise<ReleaseImpact> {
    const t = Date.parse(event.startedAt);
    const markerMinute = Math.floor(t / MINUTE) * MINUTE;
    const afterMarker = Math.ceil(t / MINUTE) * MINUTE;
    let beforeFrom = markerMinute - windows.beforeMinutes * MINUTE;
    const beforeTo = markerMinute;
    const afterFrom = afterMarker + windows.settleMinutes * MINUTE;
    let afterTo = afterFrom + windows.afterMinutes * MINUTE;
    const shortenedBy: string[] = [];
    const neighbours = await this.pg.query<{ sid: string; started_at: Date }>(
      `SELECT sid, started_at FROM events
       WHERE account_sid = $1 AND type = 'deployment' AND sid <> $2
         AND started_at > $3 AND started_at < $4
         AND (bucket_sids && $5 OR '*' = ANY(bucket_sids) OR '*' = ANY($5::text[]))
       ORDER BY started_at`,
      [
        event.accountSid,
        event.sid,
        new Date(beforeFrom - windows.settleMinutes * MINUTE),
        new Date(afterTo),
        event.bucketSids,
      ],
    );
    for (const n of neighbours.rows) {
      const at = n.started_at.getTime();
      if (at <= t) {
        const start = Math.ceil(at / MINUTE) * MINUTE + windows.settleMinutes * MINUTE;
        if (start > beforeFrom) {
          beforeFrom = Math.min(start, beforeTo);
          shortenedBy.push(n.sid);
        }
      } else {
        const end = Math.max(afterFrom, Math.floor(at / MINUTE) * MINUTE);
        if (end < afterTo) {
          afterTo = end;
          shortenedBy.push(n.sid);
        }
      }
    }
    const samples = await this.samples(event, scope, [beforeFrom, beforeTo], [afterFrom, afterTo]);
    const endpoints: EndpointImpact[] = [];
    for (const [key, s] of samples) {
      const [method, endpoint] = splitKey(key);
      endpoints.push({ endpoint, method, ...compareWindows(s.before, s.after, toMs) });
    }
    endpoints.sort(bySeverity);
    const summary: Record<Verdict, number> = { regressed: 0, improved: 0, unchanged: 0, insufficient: 0 };
    for (const e of endpoints) summary[e.verdict]++;
    const iso = (ms: number) => new Date(ms).toISOString();
    return {
      eventSid: event.sid,
      status: now.getTime() >= afterTo ? 'ready' : 'pending',
      window: {
        before: { from: iso(beforeFrom), to: iso(beforeTo) },
        after: { from: iso(afterFrom), to: iso(afterTo) },
        settleMinutes: windows.settleMinutes,
        shortenedBy,
      },
      summary,
      endpoints,
    };
  }

  /** Per `method endpoint`: the two windows' counts, errors and summed duration histograms, in one query. */
  private async samples(
    event: EventMarker,
    scope: ImpactScope | undefined,
    before: [number, number],
    after: [number, number],
  ): Promise<Map<string, { before: WindowSample; after: WindowSample }>> {
    const shown = event.bucketSids.includes('*') ? null : event.bucketSids;
    const wanted = scope?.bucketSids?.length ? scope.bucketSids : null;
    const buckets = shown && wanted ? shown.filter((b) => wanted.includes(b)) : (shown ?? wanted);
    const envs = scope
      ? [scope.environmentSid]
      : event.environmentSids.includes('*')
        ? null
        : event.environmentSids;
    const s = (ms: number) => Math.floor(ms / 1000);
    const rs = await this.ch.query({
      query: `SELECT method, endpoint, minute >= toDateTime({afterFrom:UInt32}, 'UTC') AS is_after,
          sum(requests) AS n, sum(errors) AS e,
          mapKeys(sumMap(duration_hist)) AS ks, mapValues(sumMap(duration_hist)) AS vs
        FROM ${TABLES.requestsMinute}
        WHERE account_sid = {account:String}
          ${buckets ? 'AND bucket_sid IN {buckets:Array(String)}' : ''}
          ${envs ? "AND environment_sid IN arrayConcat({envs:Array(String)}, [''])" : ''}
          AND ((minute >= toDateTime({beforeFrom:UInt32}, 'UTC') AND minute < toDateTime({beforeTo:UInt32}, 'UTC'))
            OR (minute >= toDateTime({afterFrom:UInt32}, 'UTC') AND minute < toDateTime({afterTo:UInt32}, 'UTC')))
        GROUP BY method, endpoint, is_after`,
      query_params: {
        account: event.accountSid,
        buckets: buckets ?? [],
        envs: envs ?? [],
        beforeFrom: s(before[0]),
        beforeTo: s(before[1]),
        afterFrom: s(after[0]),
        afterTo: s(after[1]),
      },
      format: 'JSONEachRow',
    });
    const out = new Map<string, { before: WindowSample; after: WindowSample }>();
    const empty = (): WindowSample => ({ count: 0, errors: 0, hist: new Map() });
    for (const row of await rs.json<{
      method: string;
      endpoint: string;
      is_after: number | boolean;
      n: string | number;
      e: string | number;
      ks: number[];
      vs: (string | number)[];
    }>()) {
      const key = `${row.method} ${row.endpoint}`;
      const entry = out.get(key) ?? { before: empty(), after: empty() };
      const hist = new Map<number, number>();
      row.ks.forEach((k, i) => {
        const v = Number(row.vs[i]);
        if (v > 0) hist.set(Number(k), v);
      });
      const sample: WindowSample = { count: Number(row.n), errors: Number(row.e), hist };
      if (Number(row.is_after)) entry.after = sample;
      else entry.before = sample;
      out.set(key, entry);
    }
    return out;
  }
}

function splitKey(key: string): [string, string] {
  const i = key.indexOf(' ');
  return [key.slice(0, i), key.slice(i + 1)];
}
