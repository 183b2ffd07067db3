import type pg from 'pg';
import { validation } from '../../shared/errors.js';

/**
 * The deepest row a list reaches by page: `page × limit` at most this. An OFFSET query reads and
 * drops every row before the page, so deep pages cost as much as the whole list; past it, a
 * narrower filter (a date range, a status) reaches the rows instead (docs/security.md "Limits").
 */
export const MAX_PAGE_DEPTH = 10_000;

/** page/limit/sort/order and the creation-date bounds of list endpoints (docs/search.md). */
export interface ListQuery {
  page: number;
  limit: number;
  sort: string;
  order: 'asc' | 'desc';
  start_date?: string;
  end_date?: string;
}

export interface ListResult<T> {
  hasMore: boolean;
  records: T[];
}

/** Fetch `limit + 1` rows; the extra one only tells whether another page exists. */
export function pageOf<T>(rows: T[], limit: number): ListResult<T> {
  return { hasMore: rows.length > limit, records: rows.slice(0, limit) };
}

/** The OFFSET of a page; a 400 beyond MAX_PAGE_DEPTH rows. */
export function offsetOf(q: Pick<ListQuery, 'page' | 'limit'>): number {
  if (q.page * q.limit > MAX_PAGE_DEPTH) {
    throw validation(
      `page × limit may be at most ${MAX_PAGE_DEPTH}: narrow the list with filters (e.g. a date range) instead of paging deeper`,
      { page: `at most ${Math.floor(MAX_PAGE_DEPTH / q.limit)} with limit ${q.limit}` },
    );
  }
  return (q.page - 1) * q.limit;
}

/**
 * The list's `start_date` / `end_date` (docs/search.md) as inclusive bounds on `column`, an SQL
 * fragment (`AND …`, empty without them) with parameters numbered from `$next` and their values.
 * start_date after end_date is a 400.
 */
export function createdWithin(
  q: Pick<ListQuery, 'start_date' | 'end_date'>,
  column: string,
  next: number,
): { sql: string; values: string[] } {
  if (q.start_date && q.end_date && Date.parse(q.start_date) > Date.parse(q.end_date)) {
    throw validation('start_date is after end_date', {
      'querystring.start_date': 'must not be after end_date',
    });
  }
  let sql = '';
  const values: string[] = [];
  if (q.start_date) {
    values.push(q.start_date);
    sql += ` AND ${column} >= $${next + values.length - 1}::timestamptz`;
  }
  if (q.end_date) {
    values.push(q.end_date);
    sql += ` AND ${column} <= $${next + values.length - 1}::timestamptz`;
  }
  return { sql, values };
}

/** A position in a list ordered by (time, sid): the time as ISO 8601 UTC with milliseconds. */
export interface TimeCursor {
  at: string;
  sid: string;
}

/** `<time>|<sid>` (schemas/common.schema.ts `timeCursorSchema`). */
export const formatTimeCursor = (c: TimeCursor): string => `${c.at}|${c.sid}`;

/** A cursor as `formatTimeCursor` writes it; anything else is a 400 naming `field`. */
export function parseTimeCursor(v: string, field = 'cursor'): TimeCursor {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)\|([A-Za-z0-9_]{1,100})$/.exec(v);
  if (!m || !Number.isFinite(Date.parse(m[1]!))) {
    throw validation(`${field} is not a cursor of this list`, {
      [field]: "must be a nextCursor of a previous page ('<createdAt>|<sid>')",
    });
  }
  return { at: m[1]!, sid: m[2]! };
}

/** ORDER BY from a whitelist: the sort key never reaches SQL as text the client chose. */
export function orderBy(q: ListQuery, columns: Record<string, string>, tieBreak = 'sid'): string {
  const col = columns[q.sort] ?? Object.values(columns)[0]!;
  const dir = q.order === 'asc' ? 'ASC' : 'DESC';
  return `${col} ${dir}, ${tieBreak} ${dir}`;
}

/**
 * One page of a list: `<select> WHERE <where>`, narrowed by the query's creation-date bounds on
 * `created_at`, in the order of the query's sort key (`sorts`: the whitelist) and one row more
 * than the page holds (pageOf). `where` numbers its parameters from $1 with `values`; the page's
 * own parameters follow them.
 */
export async function listPage<Row extends pg.QueryResultRow, T>(
  pool: pg.Pool,
  list: { select: string; where: string; values: unknown[]; sorts: Record<string, string> },
  q: ListQuery,
  map: (row: Row) => T,
): Promise<ListResult<T>> {
  const n = list.values.length;
  const created = createdWithin(q, 'created_at', n + 3);
  const r = await pool.query<Row>(
    `${list.select} WHERE ${list.where}${created.sql}
     ORDER BY ${orderBy(q, list.sorts)} LIMIT $${n + 1} OFFSET $${n + 2}`,
    [...list.values, q.limit + 1, offsetOf(q), ...created.values],
  );
  return pageOf(r.rows.map(map), q.limit);
}

export const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);
