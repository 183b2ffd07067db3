import type pg from 'pg';
import type { FromSchema } from 'json-schema-to-ts';
import type {
  SensitiveRedaction,
  SensitiveRedactionCreate,
  SensitiveRedactionUpdate,
  redactionUpdateSchema,
  redactionSchema,
} from '../../../schemas/rules.schema.js';
import {
  RuleTable,
  contentRuleFields,
  pathRuleFields,
  type RuleColumns,
  type RuleRow,
} from './rule-table.js';

/** A field redaction (JSONPath × mask/remove/hash/replace), as the API answers it. */
export type Redaction = FromSchema<typeof redactionSchema>;
export type RedactionType = Redaction['redactionType'];
export type RedactAt = Redaction['redactAt'];

/** Create and update bodies after validation (fieldPath parsed, replacementValue checked). */
export type RedactionInput = FromSchema<typeof redactionUpdateSchema>;

export type { SensitiveRedaction };
/** A redaction in the shape it was created in. */
export type AnyRedaction = Redaction | SensitiveRedaction;
type Level = SensitiveRedaction['level'];
type Scope = SensitiveRedaction['scopes'][number];
type ApplyTo = 'key' | 'value';

/** A sensitive-data rule as the SDK settings endpoint serves it (the engine's SensitiveRuleInput). */
export interface SensitiveRuleView {
  sid: string;
  type: string;
  pattern: string | null;
  applyTo: ApplyTo | null;
  level: Level;
  scopes: Scope[];
  environments: string[] | null;
}

interface Row extends RuleRow {
  field_path: string | null;
  redaction_type: RedactionType | null;
  replacement_value: string | null;
  redact_at: RedactAt;
  scopes: Scope[] | null;
  pattern: string | null;
  type: string | null;
  level: Level | null;
  apply_to: ApplyTo | null;
}

const toSensitiveRedaction = (r: Row): SensitiveRedaction => ({
  ...contentRuleFields(r),
  scopes: r.scopes ?? ['*'],
  pattern: r.pattern,
  type: r.type ?? '',
  redactAt: r.redact_at,
  level: r.level ?? 'full',
  applyTo: r.apply_to,
});

const toFieldRedaction = (r: Row): Redaction => ({
  ...pathRuleFields(r),
  fieldPath: r.field_path ?? '',
  redactionType: r.redaction_type ?? 'mask',
  replacementValue: r.replacement_value,
  redactAt: r.redact_at,
});

/**
 * Each row in its own shape: sensitive-data rows (shape A) have `type`/`level`/`scopes`, field rows (shape B)
 * `fieldPath`.
 */
const toRedaction = (r: Row): AnyRedaction =>
  r.shape === 'A' ? toSensitiveRedaction(r) : toFieldRedaction(r);

/** Omitted or empty scopes are stored as `["*"]`: the stored rule says what it covers. */
const scopesOf = (scopes: readonly Scope[] | undefined): Scope[] => (scopes?.length ? [...scopes] : ['*']);

/** replacementValue only means something for `replace`; the other types store null. */
const replacementOf = (input: RedactionInput): string | null =>
  input.redactionType === 'replace' ? (input.replacementValue ?? null) : null;

/** The columns a sensitive-data redaction sets on create and update (redactAt aside). */
const sensitiveColumns = (input: SensitiveRedactionCreate | SensitiveRedactionUpdate): RuleColumns => ({
  description: input.description ?? null,
  scopes: scopesOf(input.scopes),
  pattern: input.pattern ?? null,
  type: input.type,
  level: input.level,
  apply_to: input.applyTo ?? null,
});

/** The columns a field redaction sets on create and update (redactAt aside). */
const fieldColumns = (input: RedactionInput): RuleColumns => ({
  name: input.name,
  description: input.description ?? '',
  field_path: input.fieldPath,
  redaction_type: input.redactionType,
  replacement_value: replacementOf(input),
});

export class RedactionsRepository extends RuleTable<Row, AnyRedaction> {
  constructor(pool: pg.Pool) {
    super(pool, { table: 'redactions', kind: 'redaction', what: 'Redaction', map: toRedaction });
  }

  /** Creates a sensitive-data redaction; type, pattern and applyTo are checked by the caller. */
  async createSensitive(accountSid: string, input: SensitiveRedactionCreate): Promise<SensitiveRedaction> {
    const row = await this.insertRule(
      accountSid,
      'A',
      { ...sensitiveColumns(input), redact_at: input.redactAt ?? 'server' },
      { ...input, active: input.enabled ?? true },
    );
    return toSensitiveRedaction(row);
  }

  /**
   * Full replace of a sensitive-data redaction that is not deleted: omitted description, pattern and
   * applyTo become null, omitted scopes `["*"]`; omitted redactAt, buckets and environments keep
   * their value.
   */
  async updateSensitive(
    accountSid: string,
    sid: string,
    input: SensitiveRedactionUpdate,
  ): Promise<SensitiveRedaction> {
    const row = await this.updateRule(accountSid, sid, 'A', {
      columns: sensitiveColumns(input),
      keepWhenNull: { redact_at: input.redactAt ?? null },
      scope: { ...input, active: input.enabled },
    });
    return toSensitiveRedaction(row);
  }

  async create(accountSid: string, input: RedactionInput): Promise<Redaction> {
    const row = await this.insertRule(
      accountSid,
      'B',
      { ...fieldColumns(input), redact_at: input.redactAt ?? 'server' },
      { ...input, active: input.isActive },
    );
    return toFieldRedaction(row);
  }

  /**
   * Full replace of the field redaction fields; `redactAt`, `buckets` and `environments` keep their value
   * when omitted (a client that knows only field redactions must not move a client rule to the server).
   */
  async update(accountSid: string, sid: string, input: RedactionInput): Promise<Redaction> {
    const row = await this.updateRule(accountSid, sid, 'B', {
      columns: fieldColumns(input),
      keepWhenNull: { redact_at: input.redactAt ?? null },
      scope: { ...input, active: input.isActive },
    });
    return toFieldRedaction(row);
  }

  /** Active field rules of one `redactAt` that apply to a bucket (and environment, when given). */
  async activeFor(
    accountSid: string,
    bucketSid: string,
    redactAt: RedactAt,
    environmentSid?: string,
  ): Promise<Redaction[]> {
    const rows = await this.activeRules(accountSid, 'B', bucketSid, environmentSid, { redact_at: redactAt });
    return rows.map(toFieldRedaction);
  }

  /**
   * Enabled, undeleted sensitive-data rules of one `redactAt` for a bucket (and environment), as SDKs get
   * them.
   */
  async activeSensitiveFor(
    accountSid: string,
    bucketSid: string,
    redactAt: RedactAt,
    environmentSid?: string,
  ): Promise<SensitiveRuleView[]> {
    const rows = await this.activeRules(accountSid, 'A', bucketSid, environmentSid, { redact_at: redactAt });
    return rows.map((row) => {
      const rule = toSensitiveRedaction(row);
      return {
        sid: rule.sid,
        type: rule.type,
        pattern: rule.pattern,
        applyTo: rule.applyTo,
        level: rule.level,
        scopes: rule.scopes,
        environments: rule.environments,
      };
    });
  }
}
