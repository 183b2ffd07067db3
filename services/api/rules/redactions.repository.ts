import type pg from 'pg';
import type { FromSchema } from 'json-schema-to-ts';
import type {
  SensitiveRedaction,
  SensitiveRedactionCreate,
  SensitiveRedactionUpdate,
  redactionUpdateSchema,
  redactionSchema,
} from '../../../schemas/rules.schema.js';
import { newSid } from '../../shared/ids.js';
import { assertOwnBuckets, RuleTable, scopeOrNull, type RuleShape } from './exclusions.repository.js';
import { iso } from '../tables/pagination.js';

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

interface Row {
  sid: string;
  account_sid: string;
  shape: RuleShape;
  name: string | null;
  description: string | null;
  field_path: string | null;
  redaction_type: RedactionType | null;
  replacement_value: string | null;
  redact_at: RedactAt;
  scopes: Scope[] | null;
  pattern: string | null;
  type: string | null;
  level: Level | null;
  apply_to: ApplyTo | null;
  buckets: string[] | null;
  environments: string[] | null;
  is_active: boolean;
  created_at: Date;
  updated_at: Date | null;
  deleted_at: Date | null;
}

const toSensitiveRedaction = (r: Row): SensitiveRedaction => ({
  sid: r.sid,
  accountSid: r.account_sid,
  description: r.description,
  buckets: r.buckets,
  scopes: r.scopes ?? ['*'],
  pattern: r.pattern,
  type: r.type ?? '',
  redactAt: r.redact_at,
  level: r.level ?? 'full',
  applyTo: r.apply_to,
  environments: r.environments,
  enabled: r.is_active,
  createdAt: r.created_at.toISOString(),
  updatedAt: iso(r.updated_at),
  deletedAt: iso(r.deleted_at),
});

const toFieldRedaction = (r: Row): Redaction => ({
  sid: r.sid,
  accountSid: r.account_sid,
  name: r.name ?? '',
  description: r.description ?? '',
  fieldPath: r.field_path ?? '',
  redactionType: r.redaction_type ?? 'mask',
  replacementValue: r.replacement_value,
  redactAt: r.redact_at,
  buckets: r.buckets,
  environments: r.environments,
  isActive: r.is_active,
  createdAt: r.created_at.toISOString(),
  updatedAt: iso(r.updated_at),
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

export class RedactionsRepository extends RuleTable<Row, AnyRedaction> {
  constructor(pool: pg.Pool) {
    super(pool, { table: 'redactions', kind: 'redaction', what: 'Redaction', map: toRedaction });
  }

  /** Creates a sensitive-data redaction; type, pattern and applyTo are checked by the caller. */
  async createSensitive(accountSid: string, input: SensitiveRedactionCreate): Promise<SensitiveRedaction> {
    await assertOwnBuckets(this.pool, accountSid, input.buckets);
    const r = await this.pool.query<Row>(
      `INSERT INTO redactions (sid, account_sid, shape, description, scopes, pattern, type, redact_at, level,
         apply_to, buckets, environments, is_active)
       VALUES ($1, $2, 'A', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING *`,
      [
        newSid('redaction'),
        accountSid,
        input.description ?? null,
        scopesOf(input.scopes),
        input.pattern ?? null,
        input.type,
        input.redactAt ?? 'server',
        input.level,
        input.applyTo ?? null,
        scopeOrNull(input.buckets),
        scopeOrNull(input.environments),
        input.enabled ?? true,
      ],
    );
    return toSensitiveRedaction(r.rows[0]!);
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
    this.requireSid(sid);
    await assertOwnBuckets(this.pool, accountSid, input.buckets);
    const r = await this.pool.query<Row>(
      `UPDATE redactions SET description = $3, scopes = $4, pattern = $5, type = $6,
         redact_at = COALESCE($7, redact_at), level = $8, apply_to = $9,
         buckets = CASE WHEN $10::boolean THEN $11::text[] ELSE buckets END,
         environments = CASE WHEN $12::boolean THEN $13::text[] ELSE environments END,
         is_active = $14, updated_at = now()
       WHERE account_sid = $1 AND sid = $2 AND shape = 'A' AND deleted_at IS NULL RETURNING *`,
      [
        accountSid,
        sid,
        input.description ?? null,
        scopesOf(input.scopes),
        input.pattern ?? null,
        input.type,
        input.redactAt ?? null,
        input.level,
        input.applyTo ?? null,
        input.buckets !== undefined,
        scopeOrNull(input.buckets),
        input.environments !== undefined,
        scopeOrNull(input.environments),
        input.enabled,
      ],
    );
    if (!r.rows[0]) throw this.notFound();
    return toSensitiveRedaction(r.rows[0]);
  }

  async create(accountSid: string, input: RedactionInput): Promise<Redaction> {
    await assertOwnBuckets(this.pool, accountSid, input.buckets);
    const r = await this.pool.query<Row>(
      `INSERT INTO redactions (sid, account_sid, name, description, field_path, redaction_type,
         replacement_value, redact_at, buckets, environments, is_active)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *`,
      [
        newSid('redaction'),
        accountSid,
        input.name,
        input.description ?? '',
        input.fieldPath,
        input.redactionType,
        replacementOf(input),
        input.redactAt ?? 'server',
        scopeOrNull(input.buckets),
        scopeOrNull(input.environments),
        input.isActive,
      ],
    );
    return toFieldRedaction(r.rows[0]!);
  }

  /**
   * Full replace of the field redaction fields; `redactAt`, `buckets` and `environments` keep their value
   * when omitted (a client that knows only field redactions must not move a client rule to the server).
   */
  async update(accountSid: string, sid: string, input: RedactionInput): Promise<Redaction> {
    this.requireSid(sid);
    await assertOwnBuckets(this.pool, accountSid, input.buckets);
    const r = await this.pool.query<Row>(
      `UPDATE redactions SET name = $3, description = $4, field_path = $5, redaction_type = $6,
         replacement_value = $7, redact_at = COALESCE($8, redact_at),
         buckets = CASE WHEN $9::boolean THEN $10::text[] ELSE buckets END,
         environments = CASE WHEN $11::boolean THEN $12::text[] ELSE environments END,
         is_active = $13, updated_at = now()
       WHERE account_sid = $1 AND sid = $2 AND shape = 'B' RETURNING *`,
      [
        accountSid,
        sid,
        input.name,
        input.description ?? '',
        input.fieldPath,
        input.redactionType,
        replacementOf(input),
        input.redactAt ?? null,
        input.buckets !== undefined,
        scopeOrNull(input.buckets),
        input.environments !== undefined,
        scopeOrNull(input.environments),
        input.isActive,
      ],
    );
    if (!r.rows[0]) throw this.notFound();
    return toFieldRedaction(r.rows[0]);
  }

  /** Active field rules of one `redactAt` that apply to a bucket (and environment, when given). */
  async activeFor(
    accountSid: string,
    bucketSid: string,
    redactAt: RedactAt,
    environmentSid?: string,
  ): Promise<Redaction[]> {
    const r = await this.pool.query<Row>(
      `SELECT * FROM redactions
       WHERE account_sid = $1 AND is_active AND redact_at = $3 AND shape = 'B'
         AND (buckets IS NULL OR $2 = ANY(buckets))
         AND ($4::text IS NULL OR environments IS NULL OR $4 = ANY(environments))
       ORDER BY created_at, sid`,
      [accountSid, bucketSid, redactAt, environmentSid ?? null],
    );
    return r.rows.map(toFieldRedaction);
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
    const r = await this.pool.query<Row>(
      `SELECT * FROM redactions
       WHERE account_sid = $1 AND is_active AND redact_at = $3 AND shape = 'A' AND deleted_at IS NULL
         AND (buckets IS NULL OR $2 = ANY(buckets))
         AND ($4::text IS NULL OR environments IS NULL OR $4 = ANY(environments))
       ORDER BY created_at, sid`,
      [accountSid, bucketSid, redactAt, environmentSid ?? null],
    );
    return r.rows.map((row) => {
      const a = toSensitiveRedaction(row);
      return {
        sid: a.sid,
        type: a.type,
        pattern: a.pattern,
        applyTo: a.applyTo,
        level: a.level,
        scopes: a.scopes,
        environments: a.environments,
      };
    });
  }
}
