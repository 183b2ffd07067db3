import type pg from 'pg';
import { notFound } from '../../shared/errors.js';
import { createdWithin, offsetOf, orderBy, pageOf, type ListQuery, type ListResult } from './pagination.js';

/** An account-scoped table whose rows are addressed by `sid` (buckets, API tokens, MCP tokens). */
export interface AccountTable<Row, T> {
  /** a table name of the code, never of the client */
  table: string;
  /** the columns read (token tables never read `token_hash`) */
  columns: string;
  /** sort key of the list query -> SQL expression (a whitelist) */
  sorts: Record<string, string>;
  toRecord: (r: Row) => T;
  /** the 404's subject, e.g. 'Bucket' */
  noun: string;
}

/** The reads and the delete every account-scoped repository shares: list by page, get, delete. */
export class AccountRows<Row extends pg.QueryResultRow, T> {
  constructor(
    protected readonly pool: pg.Pool,
    private readonly t: AccountTable<Row, T>,
  ) {}

  async list(accountSid: string, q: ListQuery): Promise<ListResult<T>> {
    const created = createdWithin(q, 'created_at', 4);
    const r = await this.pool.query<Row>(
      `SELECT ${this.t.columns} FROM ${this.t.table} WHERE account_sid = $1${created.sql}
       ORDER BY ${orderBy(q, this.t.sorts)} LIMIT $2 OFFSET $3`,
      [accountSid, q.limit + 1, offsetOf(q), ...created.values],
    );
    return pageOf(r.rows.map(this.t.toRecord), q.limit);
  }

  async get(accountSid: string, sid: string): Promise<T> {
    const r = await this.pool.query<Row>(
      `SELECT ${this.t.columns} FROM ${this.t.table} WHERE account_sid = $1 AND sid = $2`,
      [accountSid, sid],
    );
    if (!r.rows[0]) throw notFound(this.t.noun);
    return this.t.toRecord(r.rows[0]);
  }

  async delete(accountSid: string, sid: string): Promise<void> {
    const r = await this.pool.query(`DELETE FROM ${this.t.table} WHERE account_sid = $1 AND sid = $2`, [
      accountSid,
      sid,
    ]);
    if (r.rowCount === 0) throw notFound(this.t.noun);
  }
}
