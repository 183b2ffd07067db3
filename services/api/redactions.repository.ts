import type pg from 'pg';
import { newSid } from '../shared/ids.js';
import { assertOwnBuckets, RULE_SORT_COLUMNS, scopeOrNull } from './exclusions.repository.js';
import { AccountTable } from './account-table.js';
import { iso } from './pagination.js';

export type RedactionType = 'mask' | 'remove' | 'hash' | 'replace';
export type RedactAt = 'client' | 'server';

export interface Redaction {
  sid: string;
  accountSid: string;
  name: string;
  description: string;
  fieldPath: string;
  redactionType: RedactionType;
  replacementValue: string | null;
  redactAt: RedactAt;
  buckets: string[] | null;
  environments: string[] | null;
  isActive: boolean;
  createdAt: string;
  updatedAt: string | null;
}

/** Create and update bodies after validation (fieldPath parsed, replacementValue checked). */
export interface RedactionInput {
  name: string;
  description?: string | null;
  fieldPath: string;
  redactionType: RedactionType;
  replacementValue?: string | null;
  redactAt?: RedactAt;
  isActive: boolean;
  buckets?: string[] | null;
  environments?: string[] | null;
}

interface Row {
  sid: string;
  account_sid: string;
  name: string;
  description: string;
  field_path: string;
  redaction_type: RedactionType;
  replacement_value: string | null;
  redact_at: RedactAt;
  buckets: string[] | null;
  environments: string[] | null;
  is_active: boolean;
  created_at: Date;
  updated_at: Date | null;
}

const toRedaction = (r: Row): Redaction => ({
  sid: r.sid,
  accountSid: r.account_sid,
  name: r.name,
  description: r.description,
  fieldPath: r.field_path,
  redactionType: r.redaction_type,
  replacementValue: r.replacement_value,
  redactAt: r.redact_at,
  buckets: r.buckets,
  environments: r.environments,
  isActive: r.is_active,
  createdAt: r.created_at.toISOString(),
  updatedAt: iso(r.updated_at),
});

/** replacementValue only means something for `replace`; the other types store null. */
const replacementOf = (input: RedactionInput): string | null =>
  input.redactionType === 'replace' ? (input.replacementValue ?? null) : null;

export class RedactionsRepository extends AccountTable<Row, Redaction> {
  constructor(pool: pg.Pool) {
    super(pool, {
      table: 'redactions',
      kind: 'redaction',
      what: 'Redaction',
      sortColumns: RULE_SORT_COLUMNS,
      map: toRedaction,
    });
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
    return toRedaction(r.rows[0]!);
  }

  /**
   * Full replace of the Shape B fields; Shape A's `redactAt`, `buckets` and `environments` keep
   * their value when omitted (a Shape B client must not move a client rule to the server).
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
       WHERE account_sid = $1 AND sid = $2 RETURNING *`,
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
    return toRedaction(r.rows[0]);
  }

  /** Active rules of one `redactAt` that apply to a bucket (and environment, when given). */
  async activeFor(
    accountSid: string,
    bucketSid: string,
    redactAt: RedactAt,
    environmentSid?: string,
  ): Promise<Redaction[]> {
    const r = await this.pool.query<Row>(
      `SELECT * FROM redactions
       WHERE account_sid = $1 AND is_active AND redact_at = $3
         AND (buckets IS NULL OR $2 = ANY(buckets))
         AND ($4::text IS NULL OR environments IS NULL OR $4 = ANY(environments))
       ORDER BY created_at, sid`,
      [accountSid, bucketSid, redactAt, environmentSid ?? null],
    );
    return r.rows.map(toRedaction);
  }
}
