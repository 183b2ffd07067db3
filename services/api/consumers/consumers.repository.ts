import type pg from 'pg';
import type {
  ConsumerListQuery,
  ConsumerSummary,
  IdentificationSource,
} from '../../../schemas/consumers.schema.js';
import type { ClickHouseClient } from '../../shared/clickhouse.js';
import { MERGE } from '../../shared/metrics-sql.js';
import { TABLES } from '../../shared/tables.js';
import { segmentsOf, type Sql } from '../metrics/metrics-queries.js';
import { labelsSql, overrideParams, type Override } from './consumer-labels.js';
import { rangeOut, scopeOf, type MetricsScope, type TimeRange } from '../metrics/metrics-range.js';

/**
 * API consumers (docs/consumers.md): identification rules and names/groups in Postgres, counts and
 * percentiles from the ClickHouse rollups keyed by consumer (`consumers_rollup`,
 * `consumer_endpoints_rollup`: 008_consumer_and_key_rollups.sql, sums of `consumers_minute` rows with the
 * endpoint metrics' histograms, so the same percentile method and error bound), first/last seen
 * and the labels records carried from `consumer_labels`.
 *
 * A consumer's name (and group) is the one written last: through `PUT …/consumers/{id}` (Postgres,
 * with its instant) or by a record that carried one (ClickHouse, with the record's createdAt).
 * The account's names set through the API go into each query as arrays, so ClickHouse resolves,
 * searches, sorts and pages on the effective label.
 */

interface StatsRow {
  cid: string;
  name: string;
  grp: string;
  req_n: string | number;
  err_n: string | number;
  pct: (number | null)[];
  fs: number | null;
  ls: number | null;
}

export interface ConsumerScope {
  accountSid: string;
  bucketSid?: string;
  /** any of these buckets (an MCP token limited to a bucket list) */
  bucketSids?: string[];
  environmentSid?: string;
  range: TimeRange;
}

const round3 = (v: number | null | undefined): number | null =>
  v === null || v === undefined || !Number.isFinite(v) ? null : Math.round(v * 1000) / 1000;
const isoOf = (ms: number | null): string | null =>
  ms === null || ms <= 0 ? null : new Date(ms).toISOString();

const SORT_SQL: Record<NonNullable<ConsumerListQuery['sort']>, string> = {
  requests: 'req_n',
  errorRate: 'err_n / req_n',
  p95: 'ifNull(pct[2], -1)',
  lastSeen: 'ls',
  name: "lower(if(name = '', cid, name))",
};

/** The aggregate columns the merges read (MERGE: counts, and the histogram with min/max for percentiles). */
const VALUE_COLUMNS = [
  'requests',
  'errors',
  'duration_count',
  'duration_min',
  'duration_max',
  'duration_hist',
];
/** The columns of the counts alone. */
const COUNT_COLUMNS = ['requests', 'errors'];
/** The columns a percentile's bounds read: no histogram. */
const BOUND_COLUMNS = ['requests', 'duration_count', 'duration_min', 'duration_max'];

/** The most candidates the list sorted by p95 merges histograms for before it merges every consumer's. */
const MAX_P95_CANDIDATES = 1000;

/** Block lengths (minutes) of consumers_rollup: single minutes, 10 minutes, an hour, a UTC day. */
const CONSUMER_LEVELS = [1440, 60, 10, 1] as const;
/** Block lengths of consumer_endpoints_rollup; its single minutes are read from consumers_minute. */
const ENDPOINT_LEVELS = [1440, 60] as const;

/**
 * The aggregate rows covering a scope's minutes, as one subquery of `keys` plus the columns the
 * merges read (MERGE: counts, and the histogram with min/max for percentiles): the largest whole
 * blocks of `rollup` inside the range, and the single minutes at its edges, from `rollup`'s own
 * level-1 rows or else from consumers_minute. Every row is a sum of consumers_minute rows, each
 * minute of the range is in exactly one block read, so the merged figures equal those of the
 * minute rows. `where` scopes both tables; the block bounds are added to `params`.
 */
function blockRows(
  scope: MetricsScope,
  levels: readonly number[],
  rollup: string,
  where: string,
  params: Record<string, unknown>,
  keys: readonly string[],
  values: readonly string[] = VALUE_COLUMNS,
): string {
  const cols = [...keys, ...values].join(', ');
  const blocks: string[] = [];
  const minutes: string[] = [];
  const ownMinutes = levels.includes(1);
  segmentsOf(scope.from, scope.to, 1440, levels).forEach((seg, k) => {
    params[`sf${k}`] = seg.from;
    params[`st${k}`] = seg.to;
    const col = seg.level === 1 && !ownMinutes ? 'minute' : 't';
    const range = `${col} >= toDateTime({sf${k}:UInt32}, 'UTC') AND ${col} <= toDateTime({st${k}:UInt32}, 'UTC')`;
    if (seg.level === 1 && !ownMinutes) minutes.push(`(${range})`);
    else blocks.push(`(level = ${seg.level} AND ${range})`);
  });
  const parts: string[] = [];
  // An empty range still needs one SELECT: `0` reads nothing.
  if (blocks.length || !minutes.length)
    parts.push(`SELECT ${cols} FROM ${rollup} WHERE ${where} AND (${blocks.join(' OR ') || '0'})`);
  if (minutes.length)
    parts.push(`SELECT ${cols} FROM ${TABLES.consumersMinute} WHERE ${where} AND (${minutes.join(' OR ')})`);
  return parts.join('\n          UNION ALL ');
}

/** The account (and bucket) condition and parameters of a scope, for both ClickHouse tables. */
function scopeFilter(s: ConsumerScope): { where: string; params: Record<string, unknown> } {
  const where = ['account_sid = {a:String}'];
  const params: Record<string, unknown> = { a: s.accountSid };
  if (s.bucketSid !== undefined) {
    where.push('bucket_sid = {b:String}');
    params.b = s.bucketSid;
  }
  if (s.bucketSids !== undefined) {
    where.push('bucket_sid IN {bs:Array(String)}');
    params.bs = s.bucketSids;
  }
  return { where: where.join(' AND '), params };
}

/** A source with its defaults written out, as stored and answered (schemas/consumers.schema.ts). */
function withDefaults(s: IdentificationSource): IdentificationSource {
  switch (s.type) {
    case 'header':
      return { type: 'header', name: s.name, hash: s.hash ?? true };
    case 'bearer':
      return { type: 'bearer' };
    case 'jwtClaim':
      return {
        type: 'jwtClaim',
        header: s.header ?? 'Authorization',
        claim: s.claim,
        ...(s.groupClaim !== undefined ? { groupClaim: s.groupClaim } : {}),
      };
    case 'query':
      return { type: 'query', name: s.name, hash: s.hash ?? false };
  }
}

export class ConsumersRepository {
  constructor(
    private readonly ch: ClickHouseClient,
    private readonly pool: pg.Pool,
    private readonly retentionDays: number,
  ) {}

  async getIdentification(accountSid: string, bucketSid: string) {
    const r = await this.pool.query<{ sources: IdentificationSource[]; updated_at: Date }>(
      'SELECT sources, updated_at FROM consumer_identification WHERE account_sid = $1 AND bucket_sid = $2',
      [accountSid, bucketSid],
    );
    const row = r.rows[0];
    return { bucketSid, sources: row?.sources ?? [], updatedAt: row ? row.updated_at.toISOString() : null };
  }

  async putIdentification(accountSid: string, bucketSid: string, given: IdentificationSource[]) {
    const sources = given.map(withDefaults);
    const r = await this.pool.query<{ updated_at: Date }>(
      `INSERT INTO consumer_identification (account_sid, bucket_sid, sources, updated_at)
       VALUES ($1, $2, $3, now())
       ON CONFLICT (bucket_sid) DO UPDATE SET sources = EXCLUDED.sources, updated_at = now()
       RETURNING updated_at`,
      [accountSid, bucketSid, JSON.stringify(sources)],
    );
    return { bucketSid, sources, updatedAt: r.rows[0]!.updated_at.toISOString() };
  }

  /** The names and groups set through the API for an account. */
  async overrides(accountSid: string): Promise<Override[]> {
    const r = await this.pool.query<{
      consumer_id: string;
      name: string | null;
      name_set_at: Date | null;
      group_name: string | null;
      group_set_at: Date | null;
    }>(
      `SELECT consumer_id, name, name_set_at, group_name, group_set_at FROM consumers
       WHERE account_sid = $1 AND (name IS NOT NULL OR group_name IS NOT NULL) ORDER BY consumer_id`,
      [accountSid],
    );
    return r.rows.map((o) => ({
      id: o.consumer_id,
      name: o.name,
      nameAt: o.name_set_at?.getTime() ?? -1,
      group: o.group_name,
      groupAt: o.group_set_at?.getTime() ?? -1,
    }));
  }

  /** Sets a name and/or group (null clears the one set here); absent fields stay as they are. */
  async update(
    accountSid: string,
    consumerId: string,
    body: { name?: string | null; group?: string | null },
  ) {
    const setName = body.name !== undefined;
    const setGroup = body.group !== undefined;
    await this.pool.query(
      `INSERT INTO consumers (account_sid, consumer_id, name, name_set_at, group_name, group_set_at)
       VALUES ($1, $2, $3, CASE WHEN $4::boolean AND $3::text IS NOT NULL THEN now() END,
               $5, CASE WHEN $6::boolean AND $5::text IS NOT NULL THEN now() END)
       ON CONFLICT (account_sid, consumer_id) DO UPDATE SET
         name = CASE WHEN $4::boolean THEN EXCLUDED.name ELSE consumers.name END,
         name_set_at = CASE WHEN $4::boolean THEN EXCLUDED.name_set_at ELSE consumers.name_set_at END,
         group_name = CASE WHEN $6::boolean THEN EXCLUDED.group_name ELSE consumers.group_name END,
         group_set_at = CASE WHEN $6::boolean THEN EXCLUDED.group_set_at ELSE consumers.group_set_at END`,
      [accountSid, consumerId, setName ? body.name : null, setName, setGroup ? body.group : null, setGroup],
    );
  }

  /**
   * The consumers_rollup rows of a scope (blockRows), narrowed to one consumer (`id`) or a list
   * (`ids`), with the aggregate columns `values`; `labelsWhere` scopes consumer_labels the same way.
   */
  private source(
    s: ConsumerScope,
    opts: { id?: string; ids?: readonly string[]; wide?: boolean },
    values: readonly string[] = VALUE_COLUMNS,
  ): { source: string; params: Record<string, unknown>; labelsWhere: string } {
    const scope = scopeOf(s.accountSid, s.range, {
      bucketSid: s.bucketSid,
      bucketSids: s.bucketSids,
      environmentSid: s.environmentSid,
      retentionDays: this.retentionDays,
      now: Date.now(),
    });
    const { where, params } = scopeFilter(s);
    const filters = [where];
    if (s.environmentSid !== undefined) {
      filters.push('environment_sid = {e:String}');
      params.e = s.environmentSid;
    }
    const labelsWhere = [where];
    if (opts.id !== undefined) {
      filters.push('consumer_id = {cid:String}');
      labelsWhere.push('consumer_id = {cid:String}');
      params.cid = opts.id;
    }
    if (opts.ids !== undefined) {
      filters.push('consumer_id IN {ids:Array(String)}');
      labelsWhere.push('consumer_id IN {ids:Array(String)}');
      params.ids = opts.ids;
    }
    // A few consumers: from the tables keyed by consumer first (consumer_endpoints_rollup, and
    // consumers_minute for the edge minutes), whose index finds their rows without reading the
    // other consumers'; consumers_rollup's key starts with the block, so a filter on a few
    // consumers would read every row of the range. Summed over endpoints, the rows are the same
    // figures (every row of both is a sum of consumers_minute rows). `wide` (the p95 candidates:
    // hundreds, mostly the busiest consumers, with a row per endpoint and block there) reads
    // consumers_rollup, one row per consumer and block.
    const few = !opts.wide && (opts.id !== undefined || opts.ids !== undefined);
    const source = few
      ? blockRows(
          scope,
          ENDPOINT_LEVELS,
          TABLES.consumerEndpointsRollup,
          filters.join(' AND '),
          params,
          ['consumer_id'],
          values,
        )
      : blockRows(
          scope,
          CONSUMER_LEVELS,
          TABLES.consumersRollup,
          filters.join(' AND '),
          params,
          ['consumer_id'],
          values,
        );
    return { source, params, labelsWhere: labelsWhere.join(' AND ') };
  }

  private statsSql(
    s: ConsumerScope,
    overrides: readonly Override[],
    opts: {
      id?: string;
      /** only these consumers */
      ids?: readonly string[];
      q?: string;
      sort?: string;
      order?: 'asc' | 'desc';
      limit?: number;
      offset?: number;
      /** false: no percentiles (NULLs), the histograms are not merged */
      percentiles?: boolean;
      /** false: no labels joined (name and group '', first/last seen NULL) */
      labels?: boolean;
      /** many consumers: read from consumers_rollup (source()) */
      wide?: boolean;
    },
  ): Sql {
    // Without percentiles only the counts are read: the histogram column is most of a row's bytes.
    const { source, params, labelsWhere } = this.source(
      s,
      opts,
      opts.percentiles === false ? COUNT_COLUMNS : VALUE_COLUMNS,
    );
    const labels = opts.labels !== false;
    const pct =
      opts.percentiles === false ? 'CAST([NULL, NULL, NULL] AS Array(Nullable(Float64)))' : MERGE.percentiles;
    const outer: string[] = [];
    if (opts.q) {
      outer.push(
        '(positionCaseInsensitiveUTF8(cid, {q:String}) > 0 OR positionCaseInsensitiveUTF8(name, {q:String}) > 0 OR positionCaseInsensitiveUTF8(grp, {q:String}) > 0)',
      );
      params.q = opts.q;
    }
    const dir = opts.order === 'asc' ? 'ASC' : 'DESC';
    const page = opts.limit !== undefined ? `LIMIT {lim:UInt32} OFFSET {off:UInt64}` : '';
    if (opts.limit !== undefined) {
      params.lim = opts.limit;
      params.off = opts.offset ?? 0;
    }
    return {
      query: `SELECT st.cid AS cid, ${labels ? 'lb.name' : "''"} AS name, ${labels ? 'lb.grp' : "''"} AS grp,
                st.req_n AS req_n, st.err_n AS err_n, st.pct AS pct,
                ${labels ? 'lb.fs' : 'CAST(NULL AS Nullable(Int64))'} AS fs, ${labels ? 'lb.ls' : 'CAST(NULL AS Nullable(Int64))'} AS ls
        FROM (
          SELECT consumer_id AS cid, ${MERGE.requests} AS req_n, ${MERGE.errors} AS err_n, ${pct} AS pct
          FROM (${source})
          GROUP BY consumer_id
          HAVING req_n > 0
        ) AS st
        ${labels ? `LEFT JOIN (${labelsSql(labelsWhere)}) AS lb ON lb.cid = st.cid` : ''}
        ${outer.length ? `WHERE ${outer.join(' AND ')}` : ''}
        ORDER BY ${SORT_SQL[(opts.sort ?? 'requests') as keyof typeof SORT_SQL]} ${dir}, cid ASC
        ${page}
        SETTINGS join_use_nulls = 0, optimize_use_implicit_projections = 0`,
      query_params: { ...params, ...overrideParams(overrides) },
    };
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
  async list(s: ConsumerScope, q: ConsumerListQuery) {
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
      this.statsSql(s, overrides, {
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
            this.statsSql(s, overrides, { ids: shown.map((r) => r.cid), percentiles: !byP95 }),
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
   * A consumer's p95 lies between the smallest and the largest duration of its rows (the picked
   * value is clamped into them; MERGE.percentiles), and those two are cheap to aggregate:
   * 1. read the `n` consumers with the best bound (descending: the highest largest duration;
   *    ascending: the lowest smallest duration), from counts, min and max only;
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
    const { source, params } = this.source(s, {}, BOUND_COLUMNS);
    const bound =
      order === 'asc'
        ? 'if(sum(duration_count) > 0, ifNull(min(duration_min), -1), -1)'
        : 'if(sum(duration_count) > 0, ifNull(max(duration_max), 1e308), -1)';
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
        this.statsSql(s, overrides, {
          ids: bounds.slice(0, n).map((b) => b.cid),
          wide: true,
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
  async get(s: ConsumerScope, id: string, opts: { inRangeOnly?: boolean } = {}) {
    const overrides = await this.overrides(s.accountSid);
    const [stats] = await this.rows<StatsRow>(this.statsSql(s, overrides, { id }));
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
    const source = blockRows(
      scope,
      ENDPOINT_LEVELS,
      TABLES.consumerEndpointsRollup,
      filters.join(' AND '),
      params,
      ['method', 'endpoint'],
    );
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
