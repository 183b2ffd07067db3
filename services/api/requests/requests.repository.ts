import type pg from 'pg';
import type { ClickHouseClient } from '../../shared/clickhouse.js';
import { notFound, validation } from '../../shared/errors.js';
import {
  REQUESTS_DELETED_COLUMNS,
  requestsColumns,
  type RequestsColumnName,
} from '../../shared/requests-row.js';
import { ClickHouseWhere } from '../../shared/clickhouse-where.js';
import { BUCKET_TABLES, TABLES } from '../../shared/tables.js';
import { viewInsertLock } from '../../shared/view-insert-lock.js';
import {
  formatTimeCursor,
  offsetOf,
  pageOf,
  type ListQuery,
  type ListResult,
  type TimeCursor,
} from '../tables/pagination.js';

export interface RequestFilters {
  startDate?: string;
  endDate?: string;
  method?: string;
  statusCode?: number;
  path?: string;
  /** compiled stream-view criteria or `q=`: extra SQL with its own named parameters */
  criteria?: { sql: string; params: Record<string, unknown> };
}

export const REQUEST_SORTS = ['createdAt', 'duration', 'statusCode'] as const;
const SORT_COLUMNS: Record<string, RequestsColumnName> = {
  createdAt: 'created_at',
  duration: 'duration',
  statusCode: 'status_code',
};

/** `*` wildcards of a path filter to a LIKE pattern, with LIKE's own metacharacters escaped. */
export function likePattern(glob: string): string {
  return glob.replace(/[\\%_]/g, (c) => `\\${c}`).replaceAll('*', '%');
}

type ApiRecord = Record<string, unknown>;

/** The request and response members the interface (docs/processing.md) lists as nullable. */
const REQUEST_NULLABLE = ['host', 'method', 'path', 'port', 'url', 'contentType', 'size'] as const;
const RESPONSE_NULLABLE = ['statusCode', 'headers', 'size', 'contentType'] as const;

/** Sets each of `keys` that `part` (an object, else nothing) lacks to null. */
function fillNull(part: unknown, keys: readonly string[]): void {
  if (!part || typeof part !== 'object' || Array.isArray(part)) return;
  const o = part as ApiRecord;
  for (const k of keys) o[k] ??= null;
}
interface StoredRow {
  record: string;
  stored_at: string;
  account_sid: string;
  bucket_sid: string;
  endpoint: string;
}
/** The columns a record's text may lack: rows stored before the processor spliced them in. */
const FILLED_COLUMNS = requestsColumns('account_sid', 'bucket_sid', 'endpoint');
/** What an API record is read from: the stored record, as text when it was stored, and the fill-ins. */
const STORED_ROW = `${requestsColumns('record')}, toString(${requestsColumns('stored_at')}) AS stored_at, ${FILLED_COLUMNS}`;

/**
 * Request records: reads from ClickHouse (every query filters by account and bucket), notes from
 * Postgres (a note is mutable, ClickHouse rows are not).
 */
export class RequestsRepository {
  constructor(
    private readonly ch: ClickHouseClient,
    private readonly pool: pg.Pool,
  ) {}

  /**
   * One page of a bucket's requests. With `cursor` (sort `createdAt` only, page 1) the page starts
   * strictly after that (createdAt, sid) in the list's order: the keyset the list is ordered by,
   * so records sharing a millisecond are neither skipped nor repeated, and records stored meanwhile
   * do not shift the pages as OFFSET paging does. `cursors[i]` is records[i]'s position;
   * `nextCursor` the last one's when more follow (createdAt order only), else null.
   */
  async list(
    accountSid: string,
    bucketSid: string,
    q: ListQuery & { cursor?: TimeCursor },
    f: RequestFilters,
  ): Promise<ListResult<ApiRecord> & { nextCursor: string | null; cursors: string[] }> {
    const where = new ClickHouseWhere({ lim: q.limit + 1, off: offsetOf(q) })
      .and('account_sid = {a:String}', { a: accountSid })
      .and('bucket_sid = {b:String}', { b: bucketSid });
    if (f.startDate)
      where.and("created_at >= parseDateTime64BestEffort({start:String}, 3, 'UTC')", { start: f.startDate });
    if (f.endDate)
      where.and("created_at <= parseDateTime64BestEffort({end:String}, 3, 'UTC')", { end: f.endDate });
    if (f.method) where.and('method = {method:String}', { method: f.method.toUpperCase() });
    if (f.statusCode !== undefined) where.and('status_code = {status:UInt16}', { status: f.statusCode });
    if (f.path) {
      if (f.path.includes('*')) where.and('path LIKE {path:String}', { path: likePattern(f.path) });
      else where.and('path = {path:String}', { path: f.path });
    }
    if (f.criteria) where.and(`(${f.criteria.sql})`, f.criteria.params);
    const col = SORT_COLUMNS[q.sort] ?? 'created_at';
    const dir = q.order === 'asc' ? 'ASC' : 'DESC';
    if (q.cursor) {
      if (col !== 'created_at')
        throw validation('cursor pages the createdAt order only', { cursor: 'needs sort=createdAt' });
      if (q.page !== 1)
        throw validation('cursor and page are alternatives', { page: 'must be 1 (or absent) with cursor' });
      const cmp = dir === 'ASC' ? '>' : '<';
      const at = "parseDateTime64BestEffort({cursorAt:String}, 3, 'UTC')";
      // The plain bound on created_at lets the primary key narrow the read; the tuple decides.
      where
        .and(`created_at ${cmp}= ${at}`, { cursorAt: q.cursor.at })
        .and(`(created_at, sid) ${cmp} (${at}, {cursorSid:String})`, { cursorSid: q.cursor.sid });
    }
    const rs = await this.ch.query({
      // The cursor columns get aliases of their own: `AS created_at` would shadow the column.
      query: `SELECT ${STORED_ROW}, toString(created_at) AS cursor_at, sid AS cursor_sid FROM ${TABLES.requests}
              WHERE ${where.sql()}
              ORDER BY ${col} ${dir}, sid ${dir} LIMIT {lim:UInt32} OFFSET {off:UInt64}`,
      query_params: where.params,
      format: 'JSONEachRow',
    });
    const rows = await rs.json<StoredRow & { cursor_at: string; cursor_sid: string }>();
    const page = pageOf(rows, q.limit);
    const records = page.records.map((r) => this.toApi(r));
    await this.attachNotes(bucketSid, records);
    const cursors = page.records.map((r) =>
      formatTimeCursor({ at: r.cursor_at.replace(' ', 'T') + 'Z', sid: r.cursor_sid }),
    );
    return {
      hasMore: page.hasMore,
      records,
      cursors,
      nextCursor: page.hasMore && col === 'created_at' ? (cursors.at(-1) ?? null) : null,
    };
  }

  /**
   * Rows stored after `after` (the live tail's cursor: stored_at, then sid for rows stored in the
   * same millisecond), oldest first. Only rows captured within `lookbackMs` before the cursor are
   * read, which keeps the scan to the newest partitions.
   */
  async listStoredAfter(
    accountSid: string,
    bucketSid: string,
    after: { storedAt: string; sid: string },
    criteria: RequestFilters['criteria'],
    limit: number,
    lookbackMs = 86_400_000,
  ): Promise<{ records: ApiRecord[]; cursors: { storedAt: string; sid: string }[] }> {
    const where = new ClickHouseWhere({ lim: limit })
      .and('account_sid = {a:String}', { a: accountSid })
      .and('bucket_sid = {b:String}', { b: bucketSid })
      .and(
        "created_at >= parseDateTime64BestEffort({after:String}, 3, 'UTC') - toIntervalMillisecond({look:UInt64})",
        { after: after.storedAt, look: lookbackMs },
      )
      .and("(stored_at, sid) > (parseDateTime64BestEffort({after:String}, 3, 'UTC'), {afterSid:String})", {
        afterSid: after.sid,
      });
    if (criteria) where.and(`(${criteria.sql})`, criteria.params);
    const rs = await this.ch.query({
      // NOTE: the text form gets its own alias: `AS stored_at` would shadow the column in WHERE.
      query: `SELECT ${requestsColumns('record', 'sid')}, toString(${requestsColumns('stored_at')}) AS stored_text, ${FILLED_COLUMNS}
              FROM ${TABLES.requests}
              WHERE ${where.sql()}
              ORDER BY stored_at ASC, sid ASC LIMIT {lim:UInt32}`,
      query_params: where.params,
      format: 'JSONEachRow',
    });
    const rows = (await rs.json<Omit<StoredRow, 'stored_at'> & { stored_text: string; sid: string }>()).map(
      ({ stored_text, ...r }) => ({ ...r, stored_at: stored_text }),
    );
    const records = rows.map((r) => this.toApi(r));
    await this.attachNotes(bucketSid, records);
    return {
      records,
      cursors: rows.map((r) => ({ storedAt: r.stored_at.replace(' ', 'T') + 'Z', sid: r.sid })),
    };
  }

  /** The ClickHouse server's clock: where a live tail that starts now begins. */
  async storeNow(): Promise<string> {
    const rs = await this.ch.query({ query: "SELECT toString(now64(3, 'UTC')) AS t", format: 'JSONEachRow' });
    const [row] = await rs.json<{ t: string }>();
    return row!.t.replace(' ', 'T') + 'Z';
  }

  async get(accountSid: string, bucketSid: string, sid: string): Promise<ApiRecord> {
    const rs = await this.ch.query({
      query: `SELECT ${STORED_ROW} FROM ${TABLES.requests}
              WHERE account_sid = {a:String} AND bucket_sid = {b:String} AND sid = {s:String} LIMIT 1`,
      query_params: { a: accountSid, b: bucketSid, s: sid },
      format: 'JSONEachRow',
    });
    const [row] = await rs.json<StoredRow>();
    if (!row) throw notFound('Request');
    const record = this.toApi(row);
    await this.attachNotes(bucketSid, [record]);
    return record;
  }

  async setNote(accountSid: string, bucketSid: string, sid: string, note: string | null): Promise<ApiRecord> {
    await this.get(accountSid, bucketSid, sid);
    await this.pool.query(
      `INSERT INTO request_notes (account_sid, bucket_sid, request_sid, note) VALUES ($1, $2, $3, $4)
       ON CONFLICT (bucket_sid, request_sid) DO UPDATE SET note = EXCLUDED.note, updated_at = now()`,
      [accountSid, bucketSid, sid, note],
    );
    return this.get(accountSid, bucketSid, sid);
  }

  /**
   * Deletes one request and takes it out of the metrics: its stored row goes into the Null table
   * `requests_deleted` first, whose materialized views write it negated into the aggregates
   * (counts, bytes, duration sum and the percentile digest; min/max cannot be undone).
   * NOTE: that insert carries a deduplication token naming the stored row (Kafka partition and
   * offset), so a retried or concurrent delete of the same request is compensated once.
   */
  async delete(accountSid: string, bucketSid: string, sid: string): Promise<void> {
    await this.get(accountSid, bucketSid, sid);
    const params = { a: accountSid, b: bucketSid, s: sid };
    const match = 'account_sid = {a:String} AND bucket_sid = {b:String} AND sid = {s:String}';
    const rs = await this.ch.query({
      query: `SELECT kafka_partition AS p, kafka_offset AS o FROM ${TABLES.requests} WHERE ${match}
              ORDER BY p, o`,
      query_params: params,
      format: 'JSONEachRow',
    });
    const stored = await rs.json<{ p: number | string; o: number | string }>();
    if (stored.length > 0) {
      // Held against rebuild-metrics' table swaps, as the processors' inserts are.
      await viewInsertLock(
        this.pool,
        this.ch,
      )(() =>
        this.ch.command({
          query: `INSERT INTO ${TABLES.requestsDeleted} (${REQUESTS_DELETED_COLUMNS})
                  SELECT ${REQUESTS_DELETED_COLUMNS} FROM ${TABLES.requests} WHERE ${match}`,
          query_params: params,
          clickhouse_settings: {
            insert_deduplicate: 1,
            insert_deduplication_token: `delete:${accountSid}:${bucketSid}:${sid}:${stored.map((r) => `${r.p}/${r.o}`).join(',')}`,
            deduplicate_blocks_in_dependent_materialized_views: 1,
          },
        }),
      );
    }
    await this.ch.command({
      query: `DELETE FROM ${TABLES.requests} WHERE ${match}`,
      query_params: params,
    });
    await this.pool.query('DELETE FROM request_notes WHERE bucket_sid = $1 AND request_sid = $2', [
      bucketSid,
      sid,
    ]);
  }

  /** Everything a deleted bucket leaves in ClickHouse: raw rows and every aggregate. */
  async deleteBucket(accountSid: string, bucketSid: string): Promise<void> {
    for (const table of BUCKET_TABLES) {
      await this.ch.command({
        query: `DELETE FROM ${table} WHERE account_sid = {a:String} AND bucket_sid = {b:String}`,
        query_params: { a: accountSid, b: bucketSid },
      });
    }
  }

  /**
   * The API's record: the stored JSON text, which is the whole record as the processor stores it
   * (accountSid, bucketSid, endpoint included), plus storedAt and a null workflowExecutions when no
   * workflow fired. Rows written by versions that stored the ingest line without those three fields
   * get them from their columns, so an upgrade serves old and new rows alike.
   */
  private toApi({ record, stored_at: storedAt, account_sid, bucket_sid, endpoint }: StoredRow): ApiRecord {
    const r = JSON.parse(record) as ApiRecord;
    r.accountSid ??= account_sid;
    r.bucketSid ??= bucket_sid;
    r.endpoint ??= endpoint;
    r.workflowExecutions ??= null;
    // Ingest always sets these; a record produced to Kafka by other means may lack them, and the
    // response schema requires them (the list must not fail for one such record).
    r.direction ??= 'in';
    r.firewall ??= { blocked: false };
    r.note ??= null;
    r.storedAt = storedAt ? new Date(storedAt.replace(' ', 'T') + 'Z').toISOString() : null;
    // The interface's (docs/processing.md) nullable fields are answered as null when a client did not send them (not left
    // out), so every record has the same keys.
    r.environmentSid ??= null;
    r.contextSid ??= null;
    r.response ??= null;
    r.timings ??= null;
    r.traces ??= null;
    fillNull(r.request, REQUEST_NULLABLE);
    if (r.request && typeof r.request === 'object') {
      const q = r.request as ApiRecord;
      q.queryString ??= {};
      q.headers ??= {};
    }
    fillNull(r.response, RESPONSE_NULLABLE);
    return r;
  }

  private async attachNotes(bucketSid: string, records: ApiRecord[]): Promise<void> {
    if (records.length === 0) return;
    const r = await this.pool.query<{ request_sid: string; note: string | null }>(
      'SELECT request_sid, note FROM request_notes WHERE bucket_sid = $1 AND request_sid = ANY($2)',
      [bucketSid, records.map((x) => x.sid as string)],
    );
    const notes = new Map(r.rows.map((x) => [x.request_sid, x.note]));
    for (const rec of records)
      if (notes.has(rec.sid as string)) rec.note = notes.get(rec.sid as string) ?? null;
  }
}
