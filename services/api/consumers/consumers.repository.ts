import type pg from 'pg';
import type { ConsumerListQuery, ConsumerSummary } from '../../../schemas/consumers.schema.js';
import type { ClickHouseClient } from '../../shared/clickhouse.js';
import { sealedThrough, type Sealed } from '../../shared/consumer-seal.js';
import { MERGE } from '../../shared/metrics-sql.js';
import { TABLES } from '../../shared/tables.js';
import type { Sql } from '../metrics/metrics-queries.js';
import { rangeOut, scopeOf } from '../metrics/metrics-range.js';
import { labelsSql, overrideParams, type Override } from './consumer-labels.js';
import { ConsumerSettingsRepository } from './consumer-settings.repository.js';
import {
  BOUND_COLUMNS,
  P95_LOWER_BOUND,
  P95_UPPER_BOUND,
  consumerSource,
  consumerStatsSql,
  scopeFilter,
  type ConsumerScope,
  type StatsRow,
} from './consumer-stats.sql.js';

export type { ConsumerScope };

/**
 * API consumers (docs/consumers.md): the list and one consumer's figures from ClickHouse
 * (consumer-stats.sql.ts), beside what is set about them in Postgres (ConsumerSettingsRepository).
 *
 * A consumer's name (and group) is the one written last: through `PUT …/consumers/{id}` (Postgres,
 * with its instant) or by a record that carried one (ClickHouse, with the record's createdAt).
 * The account's names set through the API go into each query as arrays, so ClickHouse resolves,
 * searches, sorts and pages on the effective label.
 */

const round3 = (v: number | null | undefined): number | null =>
  v === null || v === undefined || !Number.isFinite(v) ? null : Math.round(v * 1000) / 1000;
const isoOf = (ms: number | null): string | null =>
  ms === null || ms <= 0 ? null : new Date(ms).toISOString();

/** The most candidates the list sorted by p95 merges histograms for before it merges every consumer's. */
const MAX_P95_CANDIDATES = 1000;
/**
 * How long the seal's instants are reused, in ms. They only grow, and the blocks before an instant
 * read once stay complete (a rebuild writes every ended block), so a stale one reads more hours
 * and minutes.
 */
const SEAL_TTL_MS = 5_000;

export class ConsumersRepository extends ConsumerSettingsRepository {
  private seal: { at: number; value: Promise<Sealed> } | undefined;

  constructor(
    private readonly ch: ClickHouseClient,
    pool: pg.Pool,
    private readonly retentionDays: number,
  ) {
    super(pool);
  }

  /** The scope with the seal's instants (consumer-seal.ts), read at most every SEAL_TTL_MS. */
  private async sealed(s: ConsumerScope): Promise<ConsumerScope> {
    const now = Date.now();
    if (!this.seal || now - this.seal.at > SEAL_TTL_MS) {
      const value = sealedThrough(this.ch);
      this.seal = { at: now, value };
      // A failed read is not kept: the next call reads again.
      value.catch(() => {
        if (this.seal?.value === value) this.seal = undefined;
      });
    }
    return { ...s, sealed: await this.seal.value };
  }

  private async rows<T>(sql: Sql): Promise<T[]> {
    const rs = await this.ch.query({ ...sql, format: 'JSONEachRow' });
    return rs.json<T>();
  }

  private toSummary(r: StatsRow): ConsumerSummary {
    const requestCount = Number(r.req_n);
    const errorCount = Number(r.err_n);
    return {
      id: r.cid,
      name: r.name ? r.name : null,
      group: r.grp ? r.grp : null,
      requestCount,
      errorCount,
      errorRate: requestCount > 0 ? Math.round((10000 * errorCount) / requestCount) / 100 : 0,
      p50: round3(r.pct[0]),
      p95: round3(r.pct[1]),
      p99: round3(r.pct[2]),
      firstSeenAt: isoOf(r.fs === null ? null : Number(r.fs)),
      lastSeenAt: isoOf(r.ls === null ? null : Number(r.ls)),
    };
  }

  /**
   * A page of the list. Merging a duration histogram per consumer, and the labels of every
   * consumer of the bucket (consumer_labels holds every consumer ever seen, not only those of the
   * range), are most of a list's cost, so the page is picked from the counts alone unless its sort
   * (p95; name, last seen) or its `q` needs them, and the percentiles and labels are read for the
   * consumers on it only (a second query). Sorted by p95 without `q`, the histograms are merged
   * for a few candidates only (pageByP95).
   */
  async list(scope: ConsumerScope, q: ConsumerListQuery) {
    const s = await this.sealed(scope);
    const limit = q.limit ?? 25;
    const page = q.page ?? 1;
    const offset = (page - 1) * limit;
    const overrides = await this.overrides(s.accountSid);
    const byP95 = q.sort === 'p95';
    const byLabels = Boolean(q.q) || q.sort === 'name' || q.sort === 'lastSeen';
    // Rows that carry their percentiles and labels already need no second query.
    let complete = byP95 && byLabels;
    let rows: StatsRow[] | undefined;
    if (byP95 && !byLabels) {
      rows = await this.pageByP95(s, overrides, q.order ?? 'desc', limit, offset);
      complete = rows !== undefined;
    }
    rows ??= await this.rows<StatsRow>(
      consumerStatsSql(s, this.retentionDays, overrides, {
        q: q.q,
        sort: q.sort,
        order: q.order,
        limit: limit + 1,
        offset,
        percentiles: byP95,
        labels: byLabels,
      }),
    );
    const shown = rows.slice(0, limit);
    if (!complete && shown.length) {
      const more = new Map(
        (
          await this.rows<StatsRow>(
            consumerStatsSql(s, this.retentionDays, overrides, {
              ids: shown.map((r) => r.cid),
              percentiles: !byP95,
            }),
          )
        ).map((r) => [r.cid, r]),
      );
      for (const r of shown) {
        const m = more.get(r.cid);
        if (!m) continue;
        if (!byP95) r.pct = m.pct;
        if (!byLabels) Object.assign(r, { name: m.name, grp: m.grp, fs: m.fs, ls: m.ls });
      }
    }
    return { hasMore: rows.length > limit, records: shown.map((r) => this.toSummary(r)) };
  }

  /**
   * The rows `offset` to `offset + limit` (one more for `hasMore`) of the list sorted by p95,
   * merging the duration histograms of a few candidates instead of every consumer in range.
   * A consumer's p95 lies between bounds computed from the count, sum, min and max of its
   * durations (P95_UPPER_BOUND, P95_LOWER_BOUND), which are cheap to aggregate:
   * 1. read the `n` consumers with the best bound (descending: the highest upper bound;
   *    ascending: the lowest lower bound), without the histogram column;
   * 2. merge the histograms of those `n` and sort them as the list does: the last row the page
   *    needs has the sort key `tau`;
   * 3. every other consumer's bound is no better than the (n+1)-th's, and its p95 no better than
   *    its bound: when that bound is worse than `tau`, no other consumer can sort into the page,
   *    which is then the candidates' rows. Otherwise `n` grows; undefined past MAX_P95_CANDIDATES
   *    (the caller merges every consumer's histogram).
   * Consumers without a duration sort as p95 -1, as in SORT_SQL, and get the bound -1.
   */
  private async pageByP95(
    s: ConsumerScope,
    overrides: readonly Override[],
    order: 'asc' | 'desc',
    limit: number,
    offset: number,
  ): Promise<StatsRow[] | undefined> {
    const need = offset + limit + 1;
    const key = (r: StatsRow) => r.pct[1] ?? -1;
    const { source, params } = consumerSource(s, this.retentionDays, {}, BOUND_COLUMNS);
    const bound = order === 'asc' ? P95_LOWER_BOUND : P95_UPPER_BOUND;
    const bounds = await this.rows<{ cid: string; bd: number }>({
      query: `SELECT consumer_id AS cid, ${bound} AS bd
        FROM (${source})
        GROUP BY consumer_id
        HAVING sum(requests) > 0
        ORDER BY bd ${order === 'asc' ? 'ASC' : 'DESC'}, cid ASC
        LIMIT {n:UInt32}
        SETTINGS optimize_use_implicit_projections = 0`,
      query_params: { ...params, n: MAX_P95_CANDIDATES + 1 },
    });
    for (
      let n = Math.min(Math.max(4 * need, 100), MAX_P95_CANDIDATES);
      ;
      n = Math.min(8 * n, MAX_P95_CANDIDATES)
    ) {
      const rows = await this.rows<StatsRow>(
        consumerStatsSql(s, this.retentionDays, overrides, {
          ids: bounds.slice(0, n).map((b) => b.cid),
          sort: 'p95',
          order,
          limit: need,
          offset: 0,
        }),
      );
      // Every consumer in range is a candidate.
      if (bounds.length <= n) return rows.slice(offset);
      const last = rows[need - 1];
      const edge = bounds[n]!.bd;
      if (last && (order === 'asc' ? edge > key(last) : edge < key(last))) return rows.slice(offset);
      if (n === MAX_P95_CANDIDATES) break;
    }
    return undefined;
  }

  /**
   * One consumer over the range: its figures and the endpoints it called (count, errors, p95
   * each). Undefined when the consumer was never seen in scope and has no name or group set, or
   * with `inRangeOnly` when it has no call in the range and environment (an MCP token's view).
   */
  async get(given: ConsumerScope, id: string, opts: { inRangeOnly?: boolean } = {}) {
    const s = await this.sealed(given);
    const overrides = await this.overrides(s.accountSid);
    const [stats] = await this.rows<StatsRow>(consumerStatsSql(s, this.retentionDays, overrides, { id }));
    let summary: ConsumerSummary;
    if (stats) summary = this.toSummary(stats);
    else if (opts.inRangeOnly) return undefined;
    else {
      // Not seen in the range: its labels (seen before, or set through the API) with zero counts.
      const { where, params } = scopeFilter(s);
      const [lb] = await this.rows<StatsRow>({
        query: `SELECT cid, name, grp, fs, ls FROM (${labelsSql(`${where} AND consumer_id = {cid:String}`)})`,
        query_params: { ...params, cid: id, ...overrideParams(overrides) },
      });
      const o = overrides.find((x) => x.id === id);
      if (!lb && !o) return undefined;
      summary = this.toSummary({
        cid: id,
        name: lb?.name ?? o?.name ?? '',
        grp: lb?.grp ?? o?.group ?? '',
        req_n: 0,
        err_n: 0,
        pct: [null, null, null],
        fs: lb?.fs ?? null,
        ls: lb?.ls ?? null,
      });
    }
    const scope = scopeOf(s.accountSid, s.range, {
      bucketSid: s.bucketSid,
      environmentSid: s.environmentSid,
      retentionDays: this.retentionDays,
      now: Date.now(),
    });
    const { where, params } = scopeFilter(s);
    const filters = [where, 'consumer_id = {cid:String}'];
    params.cid = id;
    if (s.environmentSid !== undefined) {
      filters.push('environment_sid = {e:String}');
      params.e = s.environmentSid;
    }
    // The endpoints from the consumer's minute rows, keyed by hour, then consumer (and before 015
    // by consumer first): the index reads this consumer's granules of each hour of the range only
    // (015_consumer_minutes_by_hour.sql; bench/README.md "API consumers").
    filters.push("minute >= toDateTime({from:UInt32}, 'UTC') AND minute <= toDateTime({to:UInt32}, 'UTC')");
    params.from = scope.from;
    params.to = scope.to;
    const source = `SELECT method, endpoint, requests, errors, duration_count, duration_min, duration_max, duration_hist
      FROM ${TABLES.consumersMinute} WHERE ${filters.join(' AND ')}`;
    const endpoints = await this.rows<{
      mt: string;
      ep: string;
      req_n: string;
      err_n: string;
      p95: number | null;
    }>({
      query: `SELECT toString(method) AS mt, endpoint AS ep, ${MERGE.requests} AS req_n, ${MERGE.errors} AS err_n,
                ${MERGE.p95} AS p95
              FROM (${source})
              GROUP BY method, endpoint
              HAVING req_n > 0
              ORDER BY req_n DESC, ep, mt
              LIMIT 100
              SETTINGS optimize_use_implicit_projections = 0`,
      query_params: params,
    });
    return {
      ...summary,
      ...rangeOut(s.range),
      endpoints: endpoints.map((e) => ({
        method: e.mt,
        endpoint: e.ep,
        requestCount: Number(e.req_n),
        errorCount: Number(e.err_n),
        p95: round3(e.p95),
      })),
    };
  }
}
