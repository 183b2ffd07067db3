import type pg from 'pg';
import { notFound } from '../../shared/errors.js';
import { isSid, type SidKind } from '../../shared/ids.js';
import { createdWithin, offsetOf, orderBy, pageOf, type ListQuery, type ListResult } from './pagination.js';

/**
 * list / get / delete of an account-owned table, every query filtered by account sid. Repositories
 * extend it with their own create/update. A malformed sid is a 404 before any query runs.
 */
export class AccountTable<Row extends pg.QueryResultRow, T> {
  constructor(
    protected readonly pool: pg.Pool,
    private readonly spec: {
      /** table name: a constant of the repository, never input */
      table: string;
      kind: SidKind;
      /** noun of the 404 message */
      what: string;
      sortColumns: Record<string, string>;
      map: (row: Row) => T;
    },
  ) {}

  protected requireSid(sid: string): void {
    if (!isSid(this.spec.kind, sid)) throw notFound(this.spec.what);
  }

  protected notFound(): Error {
    return notFound(this.spec.what);
  }

  async list(accountSid: string, q: ListQuery): Promise<ListResult<T>> {
    const created = createdWithin(q, 'created_at', 4);
    const r = await this.pool.query<Row>(
      `SELECT * FROM ${this.spec.table} WHERE account_sid = $1${created.sql}
       ORDER BY ${orderBy(q, this.spec.sortColumns)} LIMIT $2 OFFSET $3`,
      [accountSid, q.limit + 1, offsetOf(q), ...created.values],
    );
    return pageOf(r.rows.map(this.spec.map), q.limit);
  }

  async get(accountSid: string, sid: string): Promise<T> {
    this.requireSid(sid);
    const r = await this.pool.query<Row>(
      `SELECT * FROM ${this.spec.table} WHERE account_sid = $1 AND sid = $2`,
      [accountSid, sid],
    );
    if (!r.rows[0]) throw this.notFound();
    return this.spec.map(r.rows[0]);
  }

  async delete(accountSid: string, sid: string): Promise<void> {
    this.requireSid(sid);
    const r = await this.pool.query(`DELETE FROM ${this.spec.table} WHERE account_sid = $1 AND sid = $2`, [
      accountSid,
      sid,
    ]);
    if (r.rowCount === 0) throw this.notFound();
  }
}
