/** page/limit/sort/order of list endpoints (spec 4.12). */
export interface ListQuery {
  page: number;
  limit: number;
  sort: string;
  order: 'asc' | 'desc';
}

export interface ListResult<T> {
  hasMore: boolean;
  records: T[];
}

/** Fetch `limit + 1` rows; the extra one only tells whether another page exists. */
export function pageOf<T>(rows: T[], limit: number): ListResult<T> {
  return { hasMore: rows.length > limit, records: rows.slice(0, limit) };
}

export function offsetOf(q: ListQuery): number {
  return (q.page - 1) * q.limit;
}

/** ORDER BY from a whitelist: the sort key never reaches SQL as text the client chose. */
export function orderBy(q: ListQuery, columns: Record<string, string>, tieBreak = 'sid'): string {
  const col = columns[q.sort] ?? Object.values(columns)[0]!;
  const dir = q.order === 'asc' ? 'ASC' : 'DESC';
  return `${col} ${dir}, ${tieBreak} ${dir}`;
}

export const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);
