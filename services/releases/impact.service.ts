import type pg from 'pg';
import { ConsumerSettingsRepository } from '../api/consumers/consumer-settings.repository.js';
import { EventsRepository, type EventMarker } from '../api/events/events.repository.js';
import type { ClickHouseClient } from '../shared/clickhouse.js';
import { validation } from '../shared/errors.js';
import { HIST_GRID } from '../shared/metrics-sql.js';
import { TABLES } from '../shared/tables.js';
import {
  DEFAULT_WINDOWS,
  ReleaseSettingsRepository,
  type ImpactWindows,
} from './release-settings.repository.js';
import {
  bySeverity,
  compareWindows,
  type Comparison,
  type Verdict,
  type WindowSample,
} from './impact-rule.js';

export { DEFAULT_WINDOWS, type ImpactWindows };

/** One consumer's calls of a regressed endpoint, judged by the endpoint rule on its own windows. */
export interface ConsumerImpact extends Comparison {
  consumer: string;
  name: string | null;
  group: string | null;
}

export interface EndpointImpact extends Comparison {
  endpoint: string;
  method: string;
  /**
   * Regressed endpoints with calls from consumers only: the consumers in severity order, at most
   * CONSUMERS_SHOWN; `consumersHit` counts those `regressed`, `consumersTotal` all of them.
   */
  consumers?: ConsumerImpact[];
  consumersHit?: number;
  consumersTotal?: number;
}

/** The consumers listed per regressed endpoint; the rest are counted in `consumersTotal`. */
export const CONSUMERS_SHOWN = 10;

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

/** The calls a comparison reads; null = every bucket / environment. */
export interface SampleFilter {
  accountSid: string;
  bucketSids: string[] | null;
  environmentSids: string[] | null;
  method?: string;
  consumer?: string;
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
  private readonly settings: ReleaseSettingsRepository;
  private readonly consumers: ConsumerSettingsRepository;

  constructor(
    private readonly pg: pg.Pool,
    private readonly ch: ClickHouseClient,
  ) {
    this.events = new EventsRepository(pg);
    this.settings = new ReleaseSettingsRepository(pg);
    this.consumers = new ConsumerSettingsRepository(pg);
  }

  /** `windows`: lengths that override the buckets' settings (the API's query parameters). */
  async impact(
    accountSid: string,
    eventSid: string,
    windows: Partial<ImpactWindows> = {},
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

  /**
   * The impact of `event`. Window lengths not given in `windows` are those of the buckets read
   * (ReleaseSettingsRepository.windowsFor: the largest among them).
   */
  async analyse(
    event: EventMarker,
    given: Partial<ImpactWindows>,
    scope: ImpactScope | undefined,
    now: Date,
  ): Promise<ReleaseImpact> {
    const windows =
      given.beforeMinutes !== undefined &&
      given.afterMinutes !== undefined &&
      given.settleMinutes !== undefined
        ? (given as ImpactWindows)
        : {
            ...(await this.settings.windowsFor(event.accountSid, bucketsOf(event, scope))),
            ...definedOf(given),
          };
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
    const filter = filterOf(event, scope);
    const before: [number, number] = [beforeFrom, beforeTo];
    const after: [number, number] = [afterFrom, afterTo];
    const endpoints: EndpointImpact[] = [];
    for (const [key, s] of await this.windowSamples(filter, before, after)) {
      const [method, endpoint] = splitKey(key);
      endpoints.push({ endpoint, method, ...compareWindows(s.before, s.after, toMs) });
    }
    endpoints.sort(bySeverity);
    await this.addConsumers(
      filter,
      endpoints.filter((e) => e.verdict === 'regressed'),
      before,
      after,
    );
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

  /**
   * The consumer dimension of the regressed endpoints (docs/releases.md "Consumers a regression
   * hits"): each consumer's calls of the endpoint in the same two windows, from the minute rows
   * (consumers_minute_all),
   * judged by the same rule. Nothing is read when no endpoint regressed; an endpoint without calls
   * from consumers gets no list.
   */
  private async addConsumers(
    filter: SampleFilter,
    regressed: EndpointImpact[],
    before: [number, number],
    after: [number, number],
  ): Promise<void> {
    if (!regressed.length) return;
    const samples = await this.consumerSamples(filter, regressed, before, after);
    if (!samples.size) return;
    const shown = new Set<string>();
    const lists: [EndpointImpact, ConsumerImpact[]][] = [];
    for (const e of regressed) {
      const byConsumer = samples.get(`${e.method} ${e.endpoint}`);
      if (!byConsumer) continue;
      const judged = [...byConsumer].map(([consumer, s]) => ({
        consumer,
        calls: s.before.count + s.after.count,
        ...compareWindows(s.before, s.after, toMs),
      }));
      judged.sort((x, y) => bySeverity(x, y) || y.calls - x.calls || (x.consumer < y.consumer ? -1 : 1));
      e.consumersHit = judged.filter((c) => c.verdict === 'regressed').length;
      e.consumersTotal = judged.length;
      const top = judged
        .slice(0, CONSUMERS_SHOWN)
        .map(({ consumer, verdict, before: b, after: a, change }): ConsumerImpact => ({
          consumer,
          name: null,
          group: null,
          verdict,
          before: b,
          after: a,
          change,
        }));
      for (const c of top) shown.add(c.consumer);
      lists.push([e, top]);
    }
    const labels = await this.labels(filter, [...shown]);
    for (const [e, top] of lists) {
      for (const c of top) Object.assign(c, labels.get(c.consumer));
      e.consumers = top;
    }
  }

  /**
   * Per `method endpoint` of `endpoints`, per consumer: the two windows' samples. The minute rows
   * of consumers are those of calls with a consumer only, so a bucket without consumers reads no row.
   */
  private async consumerSamples(
    filter: SampleFilter,
    endpoints: readonly { method: string; endpoint: string }[],
    before: [number, number],
    after: [number, number],
  ): Promise<Map<string, Map<string, { before: WindowSample; after: WindowSample }>>> {
    const s = (ms: number) => Math.floor(ms / 1000);
    const rs = await this.ch.query({
      query: `SELECT consumer_id, method, endpoint, minute >= toDateTime({afterFrom:UInt32}, 'UTC') AS is_after,
          sum(requests) AS n, sum(errors) AS e,
          mapKeys(sumMap(duration_hist)) AS ks, mapValues(sumMap(duration_hist)) AS vs
        FROM ${TABLES.consumersMinute}
        WHERE account_sid = {account:String}
          ${filter.bucketSids ? 'AND bucket_sid IN {buckets:Array(String)}' : ''}
          ${filter.environmentSids ? 'AND environment_sid IN {envs:Array(String)}' : ''}
          AND concat(toString(method), ' ', endpoint) IN {keys:Array(String)}
          AND ((minute >= toDateTime({beforeFrom:UInt32}, 'UTC') AND minute < toDateTime({beforeTo:UInt32}, 'UTC'))
            OR (minute >= toDateTime({afterFrom:UInt32}, 'UTC') AND minute < toDateTime({afterTo:UInt32}, 'UTC')))
        GROUP BY consumer_id, method, endpoint, is_after`,
      query_params: {
        account: filter.accountSid,
        buckets: filter.bucketSids ?? [],
        envs: filter.environmentSids ?? [],
        keys: endpoints.map((e) => `${e.method} ${e.endpoint}`),
        beforeFrom: s(before[0]),
        beforeTo: s(before[1]),
        afterFrom: s(after[0]),
        afterTo: s(after[1]),
      },
      format: 'JSONEachRow',
    });
    const out = new Map<string, Map<string, { before: WindowSample; after: WindowSample }>>();
    for (const row of await rs.json<SampleRow & { consumer_id: string }>()) {
      const key = `${row.method} ${row.endpoint}`;
      const byConsumer = out.get(key) ?? new Map<string, { before: WindowSample; after: WindowSample }>();
      out.set(key, byConsumer);
      place(byConsumer, row.consumer_id, row);
    }
    // A consumer whose calls in the windows were all deleted has rows summing to nothing.
    for (const [key, byConsumer] of out) {
      for (const [id, w] of byConsumer) if (w.before.count + w.after.count <= 0) byConsumer.delete(id);
      if (!byConsumer.size) out.delete(key);
    }
    return out;
  }

  /**
   * The effective name and group of consumers (docs/consumers.md): the one written last, through
   * `PUT …/consumers/{id}` (Postgres) or by a record that carried one (consumer_labels of the
   * buckets read); null when neither gave one.
   */
  private async labels(
    filter: SampleFilter,
    ids: string[],
  ): Promise<Map<string, { name: string | null; group: string | null }>> {
    const [set, carried] = await Promise.all([
      this.consumers.overrides(filter.accountSid, ids),
      this.ch
        .query({
          query: `SELECT consumer_id, argMaxMerge(name) AS name, toUnixTimestamp64Milli(max(name_at)) AS name_at,
              argMaxMerge(grp) AS grp, toUnixTimestamp64Milli(max(group_at)) AS group_at
            FROM ${TABLES.consumerLabels}
            WHERE account_sid = {account:String}
              ${filter.bucketSids ? 'AND bucket_sid IN {buckets:Array(String)}' : ''}
              AND consumer_id IN {ids:Array(String)}
            GROUP BY consumer_id`,
          query_params: { account: filter.accountSid, buckets: filter.bucketSids ?? [], ids },
          format: 'JSONEachRow',
        })
        .then((rs) =>
          rs.json<{
            consumer_id: string;
            name: string;
            name_at: string | number;
            grp: string;
            group_at: string | number;
          }>(),
        ),
    ]);
    const byId = new Map(carried.map((c) => [c.consumer_id, c]));
    const out = new Map<string, { name: string | null; group: string | null }>();
    for (const id of ids) {
      const c = byId.get(id);
      out.set(id, { name: c?.name || null, group: c?.grp || null });
    }
    // A value set through the API wins when it was set at or after the latest record's.
    for (const o of set) {
      const cur = out.get(o.id)!;
      const c = byId.get(o.id);
      if (o.name !== null && o.nameAt >= Number(c?.name_at ?? 0)) cur.name = o.name;
      if (o.group !== null && o.groupAt >= Number(c?.group_at ?? 0)) cur.group = o.group;
    }
    return out;
  }

  /**
   * Two arbitrary periods compared per endpoint template (all methods together) by the same rule
   * as a deployment's windows: MCP `compare_periods`. Periods are half-open, in epoch ms on minute
   * boundaries; the environment is matched exactly, as the metrics do.
   */
  async comparePeriods(
    filter: SampleFilter,
    before: [number, number],
    after: [number, number],
  ): Promise<Map<string, Comparison>> {
    const byEndpoint = new Map<string, { before: WindowSample; after: WindowSample }>();
    for (const [key, s] of await this.windowSamples(filter, before, after)) {
      const endpoint = splitKey(key)[1];
      const cur = byEndpoint.get(endpoint);
      byEndpoint.set(
        endpoint,
        cur ? { before: merge(cur.before, s.before), after: merge(cur.after, s.after) } : s,
      );
    }
    const out = new Map<string, Comparison>();
    for (const [endpoint, s] of byEndpoint) out.set(endpoint, compareWindows(s.before, s.after, toMs));
    return out;
  }

  /** Per `method endpoint`: the two windows' counts, errors and summed duration histograms, in one query. */
  private async windowSamples(
    filter: SampleFilter,
    before: [number, number],
    after: [number, number],
  ): Promise<Map<string, { before: WindowSample; after: WindowSample }>> {
    const s = (ms: number) => Math.floor(ms / 1000);
    // A consumer's calls are in its minute rows, of the same shape (007_consumers.sql).
    const table = filter.consumer !== undefined ? TABLES.consumersMinute : TABLES.requestsMinute;
    const rs = await this.ch.query({
      query: `SELECT method, endpoint, minute >= toDateTime({afterFrom:UInt32}, 'UTC') AS is_after,
          sum(requests) AS n, sum(errors) AS e,
          mapKeys(sumMap(duration_hist)) AS ks, mapValues(sumMap(duration_hist)) AS vs
        FROM ${table}
        WHERE account_sid = {account:String}
          ${filter.bucketSids ? 'AND bucket_sid IN {buckets:Array(String)}' : ''}
          ${filter.environmentSids ? 'AND environment_sid IN {envs:Array(String)}' : ''}
          ${filter.method !== undefined ? 'AND toString(method) = {method:String}' : ''}
          ${filter.consumer !== undefined ? 'AND consumer_id = {consumer:String}' : ''}
          AND ((minute >= toDateTime({beforeFrom:UInt32}, 'UTC') AND minute < toDateTime({beforeTo:UInt32}, 'UTC'))
            OR (minute >= toDateTime({afterFrom:UInt32}, 'UTC') AND minute < toDateTime({afterTo:UInt32}, 'UTC')))
        GROUP BY method, endpoint, is_after`,
      query_params: {
        account: filter.accountSid,
        buckets: filter.bucketSids ?? [],
        envs: filter.environmentSids ?? [],
        method: filter.method ?? '',
        consumer: filter.consumer ?? '',
        beforeFrom: s(before[0]),
        beforeTo: s(before[1]),
        afterFrom: s(after[0]),
        afterTo: s(after[1]),
      },
      format: 'JSONEachRow',
    });
    const out = new Map<string, { before: WindowSample; after: WindowSample }>();
    for (const row of await rs.json<SampleRow>()) place(out, `${row.method} ${row.endpoint}`, row);
    return out;
  }
}

/** A row of the window queries: one window's counts and summed histogram of one group. */
interface SampleRow {
  method: string;
  endpoint: string;
  is_after: number | boolean;
  n: string | number;
  e: string | number;
  ks: number[];
  vs: (string | number)[];
}

/** Puts a row's sample into its window of `key`'s entry. */
function place(
  out: Map<string, { before: WindowSample; after: WindowSample }>,
  key: string,
  row: SampleRow,
): void {
  const empty = (): WindowSample => ({ count: 0, errors: 0, hist: new Map() });
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

/**
 * The calls an event's analysis reads: its account, buckets (narrowed by the scope) and
 * environments (the scope's one, else the event's); records sent without an environment count in
 * every environment.
 */
function filterOf(event: EventMarker, scope: ImpactScope | undefined): SampleFilter {
  const envs = scope
    ? [scope.environmentSid]
    : event.environmentSids.includes('*')
      ? null
      : event.environmentSids;
  return {
    accountSid: event.accountSid,
    bucketSids: bucketsOf(event, scope),
    environmentSids: envs ? [...envs, ''] : null,
  };
}

/** The buckets an analysis reads: the event's, narrowed by the scope's (null = every bucket). */
function bucketsOf(event: EventMarker, scope: ImpactScope | undefined): string[] | null {
  const shown = event.bucketSids.includes('*') ? null : event.bucketSids;
  const wanted = scope?.bucketSids?.length ? scope.bucketSids : null;
  return shown && wanted ? shown.filter((b) => wanted.includes(b)) : (shown ?? wanted);
}

/** The window lengths a caller gave, without the keys it left undefined. */
function definedOf(w: Partial<ImpactWindows>): Partial<ImpactWindows> {
  return Object.fromEntries(Object.entries(w).filter(([, v]) => v !== undefined));
}

/** Two samples of the same window as one (an endpoint's methods together). */
function merge(x: WindowSample, y: WindowSample): WindowSample {
  const hist = new Map(x.hist);
  for (const [k, v] of y.hist) hist.set(k, (hist.get(k) ?? 0) + v);
  return { count: x.count + y.count, errors: x.errors + y.errors, hist };
}

function splitKey(key: string): [string, string] {
  const i = key.indexOf(' ');
  return [key.slice(0, i), key.slice(i + 1)];
}
