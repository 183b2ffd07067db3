import type pg from 'pg';
import { rethrowBadValue } from '../api/events/events.repository.js';
import { OwnedRows } from '../api/tables/account-table.js';
import { offsetOf, pageOf, iso, type ListResult } from '../api/tables/pagination.js';
import { validation } from '../shared/errors.js';
import { newSid } from '../shared/ids.js';

export type Sli = { kind: 'availability' } | { kind: 'latency'; thresholdMs: number };

/** An SLO as the API answers it (docs/slos.md). */
export interface Slo {
  sid: string;
  accountSid: string;
  name: string;
  bucketSid: string;
  environmentSid: string | null;
  endpoint: string | null;
  method: string | null;
  sli: Sli;
  objective: number;
  windowDays: number;
  createdAt: string;
  updatedAt: string | null;
}

export interface SloInput {
  name: string;
  bucketSid: string;
  environmentSid?: string | null;
  endpoint?: string | null;
  method?: string | null;
  sli: { kind: 'availability' } | { kind: 'latency'; thresholdMs: number };
  objective: number;
  windowDays: number;
}

interface Row {
  sid: string;
  account_sid: string;
  bucket_sid: string;
  environment_sid: string | null;
  endpoint: string | null;
  method: string | null;
  name: string;
  sli_kind: 'availability' | 'latency';
  threshold_ms: number | null;
  objective: number;
  window_days: number;
  created_at: Date;
  updated_at: Date | null;
}

const toSlo = (r: Row): Slo => ({
  sid: r.sid,
  accountSid: r.account_sid,
  name: r.name,
  bucketSid: r.bucket_sid,
  environmentSid: r.environment_sid,
  endpoint: r.endpoint,
  method: r.method,
  sli:
    r.sli_kind === 'latency' ? { kind: 'latency', thresholdMs: r.threshold_ms! } : { kind: 'availability' },
  objective: r.objective,
  windowDays: r.window_days,
  createdAt: r.created_at.toISOString(),
  updatedAt: iso(r.updated_at),
});

/** Every query filters by account: another account's SLO is a 404. */
export class SlosRepository extends OwnedRows<Row, Slo> {
  constructor(pool: pg.Pool) {
    super(pool, { table: 'slos', kind: 'slo', what: 'SLO', map: toSlo }, ['account_sid']);
  }

  async list(accountSid: string, q: { page: number; limit: number }): Promise<ListResult<Slo>> {
    const r = await this.pool.query<Row>(
      'SELECT * FROM slos WHERE account_sid = $1 ORDER BY created_at, sid LIMIT $2 OFFSET $3',
      [accountSid, q.limit + 1, offsetOf(q)],
    );
    return pageOf(r.rows.map(toSlo), q.limit);
  }

  /** Every SLO of every account (the scheduler's burn-rate evaluation reads them by sid). */
  async bySids(sids: readonly string[]): Promise<Map<string, Slo>> {
    if (sids.length === 0) return new Map();
    const r = await this.pool.query<Row>('SELECT * FROM slos WHERE sid = ANY($1)', [sids]);
    return new Map(r.rows.map((row) => [row.sid, toSlo(row)]));
  }

  get(accountSid: string, sid: string): Promise<Slo> {
    return this.getOwned([accountSid], sid);
  }

  async create(accountSid: string, input: SloInput): Promise<Slo> {
    await this.checkBucket(accountSid, input.bucketSid);
    const r = await this.pool
      .query<Row>(
        `INSERT INTO slos (sid, account_sid, bucket_sid, environment_sid, endpoint, method, name,
           sli_kind, threshold_ms, objective, window_days)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *`,
        [newSid('slo'), accountSid, ...columns(input)],
      )
      .catch(rethrowBadValue);
    return toSlo(r.rows[0]!);
  }

  /** PUT replaces the whole definition. */
  async update(accountSid: string, sid: string, input: SloInput): Promise<Slo> {
    // The SLO first: another account's sid is a 404 whatever the body says.
    await this.get(accountSid, sid);
    await this.checkBucket(accountSid, input.bucketSid);
    const r = await this.pool
      .query<Row>(
        `UPDATE slos SET bucket_sid = $3, environment_sid = $4, endpoint = $5, method = $6, name = $7,
           sli_kind = $8, threshold_ms = $9, objective = $10, window_days = $11, updated_at = now()
         WHERE account_sid = $1 AND sid = $2 RETURNING *`,
        [accountSid, sid, ...columns(input)],
      )
      .catch(rethrowBadValue);
    if (!r.rows[0]) throw this.notFound();
    return toSlo(r.rows[0]);
  }

  delete(accountSid: string, sid: string): Promise<void> {
    return this.deleteOwned([accountSid], sid);
  }

  /** A bucket of another account (or none) is a 400 naming the field, like any bad value. */
  private async checkBucket(accountSid: string, bucketSid: string): Promise<void> {
    const r = await this.pool.query('SELECT 1 FROM buckets WHERE account_sid = $1 AND sid = $2', [
      accountSid,
      bucketSid,
    ]);
    if (!r.rowCount)
      throw validation('bucketSid is not a bucket of this account', {
        'body.bucketSid': 'is not a bucket of this account',
      });
  }
}

function columns(input: SloInput): unknown[] {
  return [
    input.bucketSid,
    input.environmentSid ?? null,
    input.endpoint ?? null,
    input.method ?? null,
    input.name,
    input.sli.kind,
    input.sli.kind === 'latency' ? input.sli.thresholdMs : null,
    input.objective,
    input.windowDays,
  ];
}
