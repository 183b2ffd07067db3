import type pg from 'pg';
import { validation } from '../../shared/errors.js';
import { newSid, type SidKind } from '../../shared/ids.js';
import { AccountTable } from '../tables/account-table.js';
import { iso, type ListQuery, type ListResult } from '../tables/pagination.js';

/**
 * The API's `shape` of a rule: 'A' for content rules (criteria exclusions, sensitive-data
 * redactions), 'B' for path rules (path exclusions, field redactions); docs/architecture.md, glossary.
 */
export type RuleShape = 'A' | 'B';

/**
 * List filters of both rule lists: soft-deleted content rules are left out unless asked for
 * (`includeDeleted=true` adds them, `deleted=true` lists only them); `shape` keeps one shape.
 */
export interface RuleListQuery extends ListQuery {
  includeDeleted?: boolean;
  deleted?: boolean;
  shape?: RuleShape;
}

export const RULE_LIST_FILTERS = {
  includeDeleted: {
    type: 'boolean',
    default: false,
    description: 'true: soft-deleted Shape A rules are listed too (with their `deletedAt`)',
  },
  deleted: { type: 'boolean', description: 'true: only soft-deleted rules; false: only the others' },
  shape: { type: 'string', enum: ['A', 'B'], description: 'only rules of this shape' },
} as const;

/** WHERE conditions (after `account_sid = $1`) of a rule list; values are constants, never input. */
export function ruleListWhere(q: RuleListQuery): string {
  const where: string[] = [];
  if (q.deleted === true) where.push('deleted_at IS NOT NULL');
  else if (q.deleted === false || !q.includeDeleted) where.push('deleted_at IS NULL');
  if (q.shape === 'A') where.push(`shape = 'A'`);
  if (q.shape === 'B') where.push(`shape = 'B'`);
  return where.map((w) => ` AND ${w}`).join('');
}

export const RULE_SORTS = ['createdAt', 'updatedAt', 'name'] as const;
// A never-updated rule sorts by its creation time, not first or last as NULL would.
export const RULE_SORT_COLUMNS = {
  createdAt: 'created_at',
  updatedAt: 'COALESCE(updated_at, created_at)',
  name: 'name',
};

/** `[]` and null both mean "every bucket / environment"; stored as NULL so there is one spelling. */
export const scopeOrNull = (v: string[] | null | undefined): string[] | null => (v && v.length ? v : null);

/**
 * Rule scoping may only name buckets of the caller's account. An unknown or foreign sid is a
 * validation error naming the array position, never a hint that another account has that bucket.
 */
export async function assertOwnBuckets(
  pool: pg.Pool,
  accountSid: string,
  buckets: string[] | null | undefined,
): Promise<void> {
  if (!buckets?.length) return;
  const r = await pool.query<{ sid: string }>(
    'SELECT sid FROM buckets WHERE account_sid = $1 AND sid = ANY($2::text[])',
    [accountSid, buckets],
  );
  const found = new Set(r.rows.map((row) => row.sid));
  const details: Record<string, string> = {};
  buckets.forEach((sid, i) => {
    if (!found.has(sid)) details[`body.buckets.${i}`] = 'is not a bucket of this account';
  });
  if (Object.keys(details).length) throw validation('Unknown bucket in buckets', details);
}

/** The columns every rule row has, whatever its table and shape. */
export interface RuleRow {
  sid: string;
  account_sid: string;
  shape: RuleShape;
  name: string | null;
  description: string | null;
  buckets: string[] | null;
  environments: string[] | null;
  is_active: boolean;
  created_at: Date;
  updated_at: Date | null;
  deleted_at: Date | null;
}

/** The answer fields a path rule (path exclusion, field redaction) takes from the common columns. */
export const pathRuleFields = (r: RuleRow) => ({
  sid: r.sid,
  accountSid: r.account_sid,
  name: r.name ?? '',
  description: r.description ?? '',
  buckets: r.buckets,
  environments: r.environments,
  isActive: r.is_active,
  createdAt: r.created_at.toISOString(),
  updatedAt: iso(r.updated_at),
});

/**
 * The answer fields a content rule (criteria exclusion, sensitive-data redaction) takes from the
 * common columns: `enabled` where a path rule says `isActive`, and `deletedAt` (soft delete).
 */
export const contentRuleFields = (r: RuleRow) => ({
  sid: r.sid,
  accountSid: r.account_sid,
  description: r.description,
  buckets: r.buckets,
  environments: r.environments,
  enabled: r.is_active,
  createdAt: r.created_at.toISOString(),
  updatedAt: iso(r.updated_at),
  deletedAt: iso(r.deleted_at),
});

/** The fields every rule of either shape has: where it applies and whether it is on. */
export interface RuleScope {
  buckets?: string[] | null;
  environments?: string[] | null;
  active: boolean;
}

/**
 * A rule's own columns for an INSERT or UPDATE, column name -> value. The names are constants of
 * the repositories, never input; the values are bound parameters.
 */
export type RuleColumns = Record<string, unknown>;

/** A shape as an SQL literal (the shape comes from the code, never from input). */
const shapeLiteral = (shape: RuleShape): string => (shape === 'A' ? `'A'` : `'B'`);

/**
 * What the two rule tables share: lists of both shapes (soft-deleted content rules only on request,
 * RuleListQuery), the shape of one rule, create and full-replace update of either shape, the active
 * rules of a bucket, and DELETE: a content rule is soft-deleted (`deleted_at` set, no longer
 * applied, listed with `includeDeleted`), a path rule is removed. A soft-deleted rule is not found
 * again.
 */
export class RuleTable<Row extends RuleRow, T> extends AccountTable<Row, T> {
  constructor(
    pool: pg.Pool,
    private readonly rules: {
      table: 'exclusions' | 'redactions';
      kind: SidKind;
      what: string;
      map: (row: Row) => T;
    },
  ) {
    super(pool, { ...rules, sortColumns: RULE_SORT_COLUMNS });
  }

  override list(accountSid: string, q: RuleListQuery): Promise<ListResult<T>> {
    return this.listWhere(`account_sid = $1${ruleListWhere(q)}`, [accountSid], q);
  }

  /** The shape of a rule and whether it is soft-deleted, or undefined when the account has none. */
  async shapeOf(
    accountSid: string,
    sid: string,
  ): Promise<{ shape: RuleShape; deleted: boolean } | undefined> {
    this.requireSid(sid);
    const r = await this.pool.query<{ shape: RuleShape; deleted: boolean }>(
      `SELECT shape, deleted_at IS NOT NULL AS deleted FROM ${this.rules.table} WHERE account_sid = $1 AND sid = $2`,
      [accountSid, sid],
    );
    return r.rows[0];
  }

  override async delete(accountSid: string, sid: string): Promise<void> {
    this.requireSid(sid);
    const { table } = this.rules;
    const soft = await this.pool.query(
      `UPDATE ${table} SET deleted_at = now()
       WHERE account_sid = $1 AND sid = $2 AND shape = 'A' AND deleted_at IS NULL`,
      [accountSid, sid],
    );
    if (soft.rowCount) return;
    const hard = await this.pool.query(
      `DELETE FROM ${table} WHERE account_sid = $1 AND sid = $2 AND shape = 'B'`,
      [accountSid, sid],
    );
    if (!hard.rowCount) throw this.notFound();
  }

  /** Inserts a rule of one shape after checking that its buckets are the account's own. */
  protected async insertRule(
    accountSid: string,
    shape: RuleShape,
    columns: RuleColumns,
    scope: RuleScope,
  ): Promise<Row> {
    await assertOwnBuckets(this.pool, accountSid, scope.buckets);
    const names = Object.keys(columns);
    const values = [
      newSid(this.rules.kind),
      accountSid,
      shape,
      ...Object.values(columns),
      scopeOrNull(scope.buckets),
      scopeOrNull(scope.environments),
      scope.active,
    ];
    const r = await this.pool.query<Row>(
      `INSERT INTO ${this.rules.table}
         (sid, account_sid, shape, ${names.join(', ')}, buckets, environments, is_active)
       VALUES (${values.map((_, i) => `$${i + 1}`).join(', ')}) RETURNING *`,
      values,
    );
    return r.rows[0]!;
  }

  /**
   * Full replace of a rule of one shape that is not deleted: `columns` are set, each of
   * `keepWhenNull` is set unless its value is null (then the stored value stays), and buckets and
   * environments keep their value when omitted, so a client that does not send them never widens
   * a rule's scope by updating it. A path rule is never soft-deleted, so `deleted_at IS NULL`
   * holds for every path rule.
   */
  protected async updateRule(
    accountSid: string,
    sid: string,
    shape: RuleShape,
    changes: { columns: RuleColumns; keepWhenNull?: RuleColumns; scope: RuleScope },
  ): Promise<Row> {
    this.requireSid(sid);
    const { scope } = changes;
    await assertOwnBuckets(this.pool, accountSid, scope.buckets);
    const values: unknown[] = [accountSid, sid];
    const param = (v: unknown): string => `$${values.push(v)}`;
    const set = [
      ...Object.entries(changes.columns).map(([name, v]) => `${name} = ${param(v)}`),
      ...Object.entries(changes.keepWhenNull ?? {}).map(
        ([name, v]) => `${name} = COALESCE(${param(v)}, ${name})`,
      ),
      `buckets = CASE WHEN ${param(scope.buckets !== undefined)}::boolean THEN ${param(scopeOrNull(scope.buckets))}::text[] ELSE buckets END`,
      `environments = CASE WHEN ${param(scope.environments !== undefined)}::boolean THEN ${param(scopeOrNull(scope.environments))}::text[] ELSE environments END`,
      `is_active = ${param(scope.active)}`,
      'updated_at = now()',
    ];
    const r = await this.pool.query<Row>(
      `UPDATE ${this.rules.table} SET ${set.join(', ')}
       WHERE account_sid = $1 AND sid = $2 AND shape = ${shapeLiteral(shape)} AND deleted_at IS NULL RETURNING *`,
      values,
    );
    if (!r.rows[0]) throw this.notFound();
    return r.rows[0];
  }

  /**
   * Enabled, undeleted rules of one shape that apply to a bucket (and, when given, an environment),
   * oldest first: what the SDK settings serve. `where` adds equality conditions on the rule's own
   * columns (a constant name, a bound value).
   */
  protected async activeRules(
    accountSid: string,
    shape: RuleShape,
    bucketSid: string,
    environmentSid: string | undefined,
    where: RuleColumns = {},
  ): Promise<Row[]> {
    const values: unknown[] = [accountSid, bucketSid, environmentSid ?? null];
    const extra = Object.entries(where).map(([name, v]) => ` AND ${name} = $${values.push(v)}`);
    const r = await this.pool.query<Row>(
      `SELECT * FROM ${this.rules.table}
       WHERE account_sid = $1 AND is_active AND shape = ${shapeLiteral(shape)} AND deleted_at IS NULL${extra.join('')}
         AND (buckets IS NULL OR $2 = ANY(buckets))
         AND ($3::text IS NULL OR environments IS NULL OR $3 = ANY(environments))
       ORDER BY created_at, sid`,
      values,
    );
    return r.rows;
  }
}
