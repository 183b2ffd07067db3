import type pg from 'pg';
import { notFound } from '../../shared/errors.js';
import { isSid, type SidKind } from '../../shared/ids.js';
import { listPage, type ListQuery, type ListResult } from './pagination.js';

/** What a repository tells its table base class about the table it reads. */
export interface OwnedTableSpec<Row, T> {
  /** table name: a constant of the repository, never input */
  table: string;
  /** the columns read, `*` when omitted (token tables list theirs: `token_hash` never leaves) */
  columns?: string;
  /** when given, a sid that is not of this kind is a 404 before any query runs */
  kind?: SidKind;
  /** noun of the 404 message, e.g. 'Bucket' */
  what: string;
  map: (row: Row) => T;
}

/**
 * get and delete by sid of a table whose rows belong to an owner: `owners` are the columns that
 * name it (the account, then the bucket), and every query filters by all of them, so another
 * account's or bucket's row is a 404 like a missing one.
 */
export class OwnedRows<Row extends pg.QueryResultRow, T> {
  protected readonly columns: string;
  private readonly bySid: string;

  constructor(
    protected readonly pool: pg.Pool,
    private readonly spec: OwnedTableSpec<Row, T>,
    owners: readonly string[],
  ) {
    this.columns = spec.columns ?? '*';
    this.bySid = [...owners, 'sid'].map((c, i) => `${c} = $${i + 1}`).join(' AND ');
  }

  protected requireSid(sid: string): void {
    if (this.spec.kind && !isSid(this.spec.kind, sid)) throw notFound(this.spec.what);
  }

  protected notFound(): Error {
    return notFound(this.spec.what);
  }

  protected async getOwned(owner: string[], sid: string): Promise<T> {
    this.requireSid(sid);
    const r = await this.pool.query<Row>(
      `SELECT ${this.columns} FROM ${this.spec.table} WHERE ${this.bySid}`,
      [...owner, sid],
    );
    if (!r.rows[0]) throw this.notFound();
    return this.spec.map(r.rows[0]);
  }

  protected async deleteOwned(owner: string[], sid: string): Promise<void> {
    this.requireSid(sid);
    const r = await this.pool.query(`DELETE FROM ${this.spec.table} WHERE ${this.bySid}`, [...owner, sid]);
    if (r.rowCount === 0) throw this.notFound();
  }
}

/**
 * list / get / delete of an account-owned table whose rows are addressed by `sid`, every query
 * filtered by account sid. Repositories extend it with their own create/update.
 */
export class AccountTable<Row extends pg.QueryResultRow, T> extends OwnedRows<Row, T> {
  constructor(
    pool: pg.Pool,
    private readonly accountSpec: OwnedTableSpec<Row, T> & {
      /** sort key of the list query -> SQL expression (a whitelist) */
      sortColumns: Record<string, string>;
    },
  ) {
    super(pool, accountSpec, ['account_sid']);
  }

  list(accountSid: string, q: ListQuery): Promise<ListResult<T>> {
    return this.listWhere('account_sid = $1', [accountSid], q);
  }

  /** A page of the rows matching `where` (parameters from $1 with `values`). */
  protected listWhere(where: string, values: unknown[], q: ListQuery): Promise<ListResult<T>> {
    const { table, sortColumns, map } = this.accountSpec;
    const select = `SELECT ${this.columns} FROM ${table}`;
    return listPage(this.pool, { select, where, values, sorts: sortColumns }, q, map);
  }

  get(accountSid: string, sid: string): Promise<T> {
    return this.getOwned([accountSid], sid);
  }

  delete(accountSid: string, sid: string): Promise<void> {
    return this.deleteOwned([accountSid], sid);
  }
}

/**
 * get / delete of a table whose rows belong to one bucket of an account (stream views, endpoint
 * templates): every query names the account and the bucket.
 */
export class BucketTable<Row extends pg.QueryResultRow, T> extends OwnedRows<Row, T> {
  constructor(pool: pg.Pool, spec: OwnedTableSpec<Row, T>) {
    super(pool, spec, ['account_sid', 'bucket_sid']);
  }

  get(accountSid: string, bucketSid: string, sid: string): Promise<T> {
    return this.getOwned([accountSid, bucketSid], sid);
  }

  delete(accountSid: string, bucketSid: string, sid: string): Promise<void> {
    return this.deleteOwned([accountSid, bucketSid], sid);
  }
}
