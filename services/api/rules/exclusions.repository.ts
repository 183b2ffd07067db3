import type pg from 'pg';
import type { FromSchema } from 'json-schema-to-ts';
import type {
  CriteriaExclusion,
  CriteriaExclusionCreate,
  CriteriaExclusionUpdate,
  exclusionSchema,
  exclusionUpdateSchema,
} from '../../../schemas/rules.schema.js';
import { validation } from '../../shared/errors.js';
import { newSid, type SidKind } from '../../shared/ids.js';
import { AccountTable } from '../tables/account-table.js';
import {
  createdWithin,
  iso,
  offsetOf,
  orderBy,
  pageOf,
  type ListQuery,
  type ListResult,
} from '../tables/pagination.js';

export type RuleShape = 'A' | 'B';

/** A path exclusion (path × method × status), as the API answers it. */
export type Exclusion = FromSchema<typeof exclusionSchema>;

/** Create and update bodies after schema validation (PUT: full replace, see docs/rules.md). */
export type ExclusionInput = FromSchema<typeof exclusionUpdateSchema>;

export type { CriteriaExclusion };
/** An exclusion in the shape it was created in. */
export type AnyExclusion = Exclusion | CriteriaExclusion;

interface Row {
  sid: string;
  account_sid: string;
  shape: RuleShape;
  name: string | null;
  description: string | null;
  path_pattern: string | null;
  method: string;
  status_code: number | null;
  criteria: string | null;
  buckets: string[] | null;
  environments: string[] | null;
  is_active: boolean;
  created_at: Date;
  updated_at: Date | null;
  deleted_at: Date | null;
}

const toCriteriaExclusion = (r: Row): CriteriaExclusion => ({
  sid: r.sid,
  accountSid: r.account_sid,
  description: r.description,
  criteria: r.criteria ?? '',
  buckets: r.buckets,
  environments: r.environments,
  enabled: r.is_active,
  createdAt: r.created_at.toISOString(),
  updatedAt: iso(r.updated_at),
  deletedAt: iso(r.deleted_at),
});

const toPathExclusion = (r: Row): Exclusion => ({
  sid: r.sid,
  accountSid: r.account_sid,
  name: r.name ?? '',
  description: r.description ?? '',
  pathPattern: r.path_pattern ?? '',
  method: r.method,
  statusCode: r.status_code,
  buckets: r.buckets,
  environments: r.environments,
  isActive: r.is_active,
  createdAt: r.created_at.toISOString(),
  updatedAt: iso(r.updated_at),
});

/** Each row in its own shape: criteria rows (shape A) have `criteria`, path rows (shape B) `pathPattern`. */
const toExclusion = (r: Row): AnyExclusion => (r.shape === 'A' ? toCriteriaExclusion(r) : toPathExclusion(r));

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

/**
 * What the two rule tables share: lists of both shapes (soft-deleted content rules only on request,
 * RuleListQuery), the shape of one rule, and DELETE: a content rule is soft-deleted (`deleted_at`
 * set, no longer applied, listed with `includeDeleted`), a path rule is removed. A soft-deleted
 * rule is not found again.
 */
export class RuleTable<Row extends pg.QueryResultRow, T> extends AccountTable<Row, T> {
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

  override async list(accountSid: string, q: RuleListQuery): Promise<ListResult<T>> {
    const created = createdWithin(q, 'created_at', 4);
    const r = await this.pool.query<Row>(
      `SELECT * FROM ${this.rules.table} WHERE account_sid = $1${ruleListWhere(q)}${created.sql}
       ORDER BY ${orderBy(q, RULE_SORT_COLUMNS)} LIMIT $2 OFFSET $3`,
      [accountSid, q.limit + 1, offsetOf(q), ...created.values],
    );
    return pageOf(r.rows.map(this.rules.map), q.limit);
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
}

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

export class ExclusionsRepository extends RuleTable<Row, AnyExclusion> {
  constructor(pool: pg.Pool) {
    super(pool, { table: 'exclusions', kind: 'exclusion', what: 'Exclusion', map: toExclusion });
  }

  /** Creates a criteria exclusion; `criteria` is checked by the caller (it parses). */
  async createCriteria(accountSid: string, input: CriteriaExclusionCreate): Promise<CriteriaExclusion> {
    await assertOwnBuckets(this.pool, accountSid, input.buckets);
    const r = await this.pool.query<Row>(
      `INSERT INTO exclusions (sid, account_sid, shape, description, criteria, buckets, environments, is_active)
       VALUES ($1, $2, 'A', $3, $4, $5, $6, $7) RETURNING *`,
      [
        newSid('exclusion'),
        accountSid,
        input.description ?? null,
        input.criteria,
        scopeOrNull(input.buckets),
        scopeOrNull(input.environments),
        input.enabled ?? true,
      ],
    );
    return toCriteriaExclusion(r.rows[0]!);
  }

  /** Full replace of a criteria exclusion that is not deleted; buckets/environments kept when omitted. */
  async updateCriteria(
    accountSid: string,
    sid: string,
    input: CriteriaExclusionUpdate,
  ): Promise<CriteriaExclusion> {
    this.requireSid(sid);
    await assertOwnBuckets(this.pool, accountSid, input.buckets);
    const r = await this.pool.query<Row>(
      `UPDATE exclusions SET description = $3, criteria = $4,
         buckets = CASE WHEN $5::boolean THEN $6::text[] ELSE buckets END,
         environments = CASE WHEN $7::boolean THEN $8::text[] ELSE environments END,
         is_active = $9, updated_at = now()
       WHERE account_sid = $1 AND sid = $2 AND shape = 'A' AND deleted_at IS NULL RETURNING *`,
      [
        accountSid,
        sid,
        input.description ?? null,
        input.criteria,
        input.buckets !== undefined,
        scopeOrNull(input.buckets),
        input.environments !== undefined,
        scopeOrNull(input.environments),
        input.enabled,
      ],
    );
    if (!r.rows[0]) throw this.notFound();
    return toCriteriaExclusion(r.rows[0]);
  }

  async create(accountSid: string, input: ExclusionInput): Promise<Exclusion> {
    await assertOwnBuckets(this.pool, accountSid, input.buckets);
    const r = await this.pool.query<Row>(
      `INSERT INTO exclusions
         (sid, account_sid, name, description, path_pattern, method, status_code, buckets, environments, is_active)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING *`,
      [
        newSid('exclusion'),
        accountSid,
        input.name,
        input.description ?? '',
        input.pathPattern,
        input.method,
        input.statusCode ?? null,
        scopeOrNull(input.buckets),
        scopeOrNull(input.environments),
        input.isActive,
      ],
    );
    return toPathExclusion(r.rows[0]!);
  }

  /**
   * Full replace of the path exclusion fields; the scoping fields keep their value when omitted,
   * so a client that knows only path exclusions never widens a rule's scope by updating it.
   */
  async update(accountSid: string, sid: string, input: ExclusionInput): Promise<Exclusion> {
    this.requireSid(sid);
    await assertOwnBuckets(this.pool, accountSid, input.buckets);
    const r = await this.pool.query<Row>(
      `UPDATE exclusions SET name = $3, description = $4, path_pattern = $5, method = $6, status_code = $7,
         buckets = CASE WHEN $8::boolean THEN $9::text[] ELSE buckets END,
         environments = CASE WHEN $10::boolean THEN $11::text[] ELSE environments END,
         is_active = $12, updated_at = now()
       WHERE account_sid = $1 AND sid = $2 AND shape = 'B' RETURNING *`,
      [
        accountSid,
        sid,
        input.name,
        input.description ?? '',
        input.pathPattern,
        input.method,
        input.statusCode ?? null,
        input.buckets !== undefined,
        scopeOrNull(input.buckets),
        input.environments !== undefined,
        scopeOrNull(input.environments),
        input.isActive,
      ],
    );
    if (!r.rows[0]) throw this.notFound();
    return toPathExclusion(r.rows[0]);
  }

  /** Active path exclusions that apply to a bucket (and, when given, an environment): SDK settings. */
  async activeFor(accountSid: string, bucketSid: string, environmentSid?: string): Promise<Exclusion[]> {
    const r = await this.pool.query<Row>(
      `SELECT * FROM exclusions
       WHERE account_sid = $1 AND is_active AND shape = 'B'
         AND (buckets IS NULL OR $2 = ANY(buckets))
         AND ($3::text IS NULL OR environments IS NULL OR $3 = ANY(environments))
       ORDER BY created_at, sid`,
      [accountSid, bucketSid, environmentSid ?? null],
    );
    return r.rows.map(toPathExclusion);
  }

  /** Enabled, undeleted criteria exclusions that apply to a bucket (and environment): SDK settings. */
  async activeCriteriaFor(
    accountSid: string,
    bucketSid: string,
    environmentSid?: string,
  ): Promise<CriteriaExclusion[]> {
    const r = await this.pool.query<Row>(
      `SELECT * FROM exclusions
       WHERE account_sid = $1 AND is_active AND shape = 'A' AND deleted_at IS NULL
         AND (buckets IS NULL OR $2 = ANY(buckets))
         AND ($3::text IS NULL OR environments IS NULL OR $3 = ANY(environments))
       ORDER BY created_at, sid`,
      [accountSid, bucketSid, environmentSid ?? null],
    );
    return r.rows.map(toCriteriaExclusion);
  }
}
