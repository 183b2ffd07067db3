import type pg from 'pg';
import type { FromSchema } from 'json-schema-to-ts';
import type {
  CriteriaExclusion,
  CriteriaExclusionCreate,
  CriteriaExclusionUpdate,
  exclusionSchema,
  exclusionUpdateSchema,
} from '../../../schemas/rules.schema.js';
import {
  RuleTable,
  contentRuleFields,
  pathRuleFields,
  type RuleColumns,
  type RuleRow,
} from './rule-table.js';

/** A path exclusion (path × method × status), as the API answers it. */
export type Exclusion = FromSchema<typeof exclusionSchema>;

/** Create and update bodies after schema validation (PUT: full replace, see docs/rules.md). */
export type ExclusionInput = FromSchema<typeof exclusionUpdateSchema>;

export type { CriteriaExclusion };
/** An exclusion in the shape it was created in. */
export type AnyExclusion = Exclusion | CriteriaExclusion;

interface Row extends RuleRow {
  path_pattern: string | null;
  method: string;
  status_code: number | null;
  criteria: string | null;
}

const toCriteriaExclusion = (r: Row): CriteriaExclusion => ({
  ...contentRuleFields(r),
  criteria: r.criteria ?? '',
});

const toPathExclusion = (r: Row): Exclusion => ({
  ...pathRuleFields(r),
  pathPattern: r.path_pattern ?? '',
  method: r.method,
  statusCode: r.status_code,
});

/** The columns a criteria exclusion sets on create and update. */
const criteriaColumns = (input: CriteriaExclusionCreate | CriteriaExclusionUpdate): RuleColumns => ({
  description: input.description ?? null,
  criteria: input.criteria,
});

/** The columns a path exclusion sets on create and update. */
const pathColumns = (input: ExclusionInput): RuleColumns => ({
  name: input.name,
  description: input.description ?? '',
  path_pattern: input.pathPattern,
  method: input.method,
  status_code: input.statusCode ?? null,
});

/** Each row in its own shape: criteria rows (shape A) have `criteria`, path rows (shape B) `pathPattern`. */
const toExclusion = (r: Row): AnyExclusion => (r.shape === 'A' ? toCriteriaExclusion(r) : toPathExclusion(r));

export class ExclusionsRepository extends RuleTable<Row, AnyExclusion> {
  constructor(pool: pg.Pool) {
    super(pool, { table: 'exclusions', kind: 'exclusion', what: 'Exclusion', map: toExclusion });
  }

  /** Creates a criteria exclusion; `criteria` is checked by the caller (it parses). */
  async createCriteria(accountSid: string, input: CriteriaExclusionCreate): Promise<CriteriaExclusion> {
    const row = await this.insertRule(accountSid, 'A', criteriaColumns(input), {
      ...input,
      active: input.enabled ?? true,
    });
    return toCriteriaExclusion(row);
  }

  /** Full replace of a criteria exclusion that is not deleted; buckets/environments kept when omitted. */
  async updateCriteria(
    accountSid: string,
    sid: string,
    input: CriteriaExclusionUpdate,
  ): Promise<CriteriaExclusion> {
    const row = await this.updateRule(accountSid, sid, 'A', {
      columns: criteriaColumns(input),
      scope: { ...input, active: input.enabled },
    });
    return toCriteriaExclusion(row);
  }

  async create(accountSid: string, input: ExclusionInput): Promise<Exclusion> {
    const row = await this.insertRule(accountSid, 'B', pathColumns(input), {
      ...input,
      active: input.isActive,
    });
    return toPathExclusion(row);
  }

  /**
   * Full replace of the path exclusion fields; the scoping fields keep their value when omitted,
   * so a client that knows only path exclusions never widens a rule's scope by updating it.
   */
  async update(accountSid: string, sid: string, input: ExclusionInput): Promise<Exclusion> {
    const row = await this.updateRule(accountSid, sid, 'B', {
      columns: pathColumns(input),
      scope: { ...input, active: input.isActive },
    });
    return toPathExclusion(row);
  }

  /** Active path exclusions that apply to a bucket (and, when given, an environment): SDK settings. */
  async activeFor(accountSid: string, bucketSid: string, environmentSid?: string): Promise<Exclusion[]> {
    const rows = await this.activeRules(accountSid, 'B', bucketSid, environmentSid);
    return rows.map(toPathExclusion);
  }

  /** Enabled, undeleted criteria exclusions that apply to a bucket (and environment): SDK settings. */
  async activeCriteriaFor(
    accountSid: string,
    bucketSid: string,
    environmentSid?: string,
  ): Promise<CriteriaExclusion[]> {
    const rows = await this.activeRules(accountSid, 'A', bucketSid, environmentSid);
    return rows.map(toCriteriaExclusion);
  }
}
