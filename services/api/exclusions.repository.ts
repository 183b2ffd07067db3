import type pg from 'pg';
import { validation } from '../shared/errors.js';
import { newSid } from '../shared/ids.js';
import { AccountTable } from './account-table.js';
import { iso } from './pagination.js';

export interface Exclusion {
  sid: string;
  accountSid: string;
  name: string;
  description: string;
  pathPattern: string;
  method: string;
  statusCode: number | null;
  buckets: string[] | null;
  environments: string[] | null;
  isActive: boolean;
  createdAt: string;
  updatedAt: string | null;
}

/** Create and update bodies after schema validation (PUT: full replace, see docs/rules.md). */
export interface ExclusionInput {
  name: string;
  description?: string | null;
  pathPattern: string;
  method: string;
  statusCode?: number | null;
  isActive: boolean;
  buckets?: string[] | null;
  environments?: string[] | null;
}

interface Row {
  sid: string;
  account_sid: string;
  name: string;
  description: string;
  path_pattern: string;
  method: string;
  status_code: number | null;
  buckets: string[] | null;
  environments: string[] | null;
  is_active: boolean;
  created_at: Date;
  updated_at: Date | null;
}

const toExclusion = (r: Row): Exclusion => ({
  sid: r.sid,
  accountSid: r.account_sid,
  name: r.name,
  description: r.description,
  pathPattern: r.path_pattern,
  method: r.method,
  statusCode: r.status_code,
  buckets: r.buckets,
  environments: r.environments,
  isActive: r.is_active,
  createdAt: r.created_at.toISOString(),
  updatedAt: iso(r.updated_at),
});

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

export class ExclusionsRepository extends AccountTable<Row, Exclusion> {
  constructor(pool: pg.Pool) {
    super(pool, {
      table: 'exclusions',
      kind: 'exclusion',
      what: 'Exclusion',
      sortColumns: RULE_SORT_COLUMNS,
      map: toExclusion,
    });
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
    return toExclusion(r.rows[0]!);
  }

  /**
   * Full replace of the Shape B fields; the Shape A scoping fields keep their value when omitted,
   * so a client that knows only Shape B never widens a rule's scope by updating it.
   */
  async update(accountSid: string, sid: string, input: ExclusionInput): Promise<Exclusion> {
    this.requireSid(sid);
    await assertOwnBuckets(this.pool, accountSid, input.buckets);
    const r = await this.pool.query<Row>(
      `UPDATE exclusions SET name = $3, description = $4, path_pattern = $5, method = $6, status_code = $7,
         buckets = CASE WHEN $8::boolean THEN $9::text[] ELSE buckets END,
         environments = CASE WHEN $10::boolean THEN $11::text[] ELSE environments END,
         is_active = $12, updated_at = now()
       WHERE account_sid = $1 AND sid = $2 RETURNING *`,
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
    return toExclusion(r.rows[0]);
  }

  /** Active exclusions that apply to a bucket (and, when given, an environment): SDK settings. */
  async activeFor(accountSid: string, bucketSid: string, environmentSid?: string): Promise<Exclusion[]> {
    const r = await this.pool.query<Row>(
      `SELECT * FROM exclusions
       WHERE account_sid = $1 AND is_active
         AND (buckets IS NULL OR $2 = ANY(buckets))
         AND ($3::text IS NULL OR environments IS NULL OR $3 = ANY(environments))
       ORDER BY created_at, sid`,
      [accountSid, bucketSid, environmentSid ?? null],
    );
    return r.rows.map(toExclusion);
  }
}
