import type pg from 'pg';
import type {
  EndpointTemplateCreate,
  EndpointTemplateUpdate,
} from '../../../schemas/endpoint-template.schema.js';
import type { ClickHouseClient } from '../../shared/clickhouse.js';
import { parseEndpointPattern, patternShape } from '../../shared/endpoint-pattern.js';
import { AppError, notFound, validation } from '../../shared/errors.js';
import { newSid } from '../../shared/ids.js';
import { suggestTemplates, type Suggestion } from './endpoint-template-suggestions.js';
import { endpointCountsSql } from '../metrics/metrics-queries.js';
import { rangeOut, scopeOf, type TimeRange } from '../metrics/metrics-range.js';
import { BucketTable } from '../tables/account-table.js';
import { iso } from '../tables/pagination.js';

/** Rules a bucket holds at most: each record of the bucket is compared with those of its length. */
export const MAX_TEMPLATES_PER_BUCKET = 100;
/** Endpoints of a range the suggestions read at most (the busiest). */
const MAX_SUGGESTION_ENDPOINTS = 10_000;

export interface EndpointTemplate {
  sid: string;
  accountSid: string;
  bucketSid: string;
  pattern: string;
  method: string | null;
  createdAt: string;
  updatedAt: string | null;
}

interface Row {
  sid: string;
  account_sid: string;
  bucket_sid: string;
  pattern: string;
  shape: string;
  method: string | null;
  created_at: Date;
  updated_at: Date | null;
}

const toTemplate = (r: Row): EndpointTemplate => ({
  sid: r.sid,
  accountSid: r.account_sid,
  bucketSid: r.bucket_sid,
  pattern: r.pattern,
  method: r.method,
  createdAt: r.created_at.toISOString(),
  updatedAt: iso(r.updated_at),
});

/** The pattern's shape, or a 400 naming what is wrong with it. */
function shapeOf(pattern: string): string {
  const p = parseEndpointPattern(pattern);
  if (!p.ok) throw validation(`pattern ${p.error}`, { 'body.pattern': p.error });
  return patternShape(p.segments);
}

const methodOf = (m: string | null | undefined) => (m ? m.toUpperCase() : null);

const duplicate = () =>
  new AppError(409, 'CONFLICT', 'The bucket already has a template rule matching the same paths and method', {
    'body.pattern':
      'a rule of this bucket already matches the same paths (placeholder names aside) and method',
  });

const isUniqueViolation = (err: unknown) => (err as { code?: string }).code === '23505';

/**
 * A bucket's endpoint template rules (docs/processing.md, "Endpoint templates") in Postgres, in
 * creation order. Every query names the account and the bucket: another's rule is a 404.
 */
export class EndpointTemplatesRepository extends BucketTable<Row, EndpointTemplate> {
  constructor(
    pool: pg.Pool,
    private readonly ch: ClickHouseClient,
    private readonly retentionDays: number,
  ) {
    super(pool, {
      table: 'endpoint_templates',
      kind: 'endpointTemplate',
      what: 'Endpoint template',
      map: toTemplate,
    });
  }

  async list(accountSid: string, bucketSid: string): Promise<EndpointTemplate[]> {
    const r = await this.pool.query<Row>(
      `SELECT * FROM endpoint_templates WHERE account_sid = $1 AND bucket_sid = $2 ORDER BY created_at, sid`,
      [accountSid, bucketSid],
    );
    return r.rows.map(toTemplate);
  }

  /**
   * Appends a rule. The bucket's row is locked while its rules are counted, so two creations at
   * once cannot pass the limit together.
   */
  async create(
    accountSid: string,
    bucketSid: string,
    input: EndpointTemplateCreate,
  ): Promise<EndpointTemplate> {
    const shape = shapeOf(input.pattern);
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const bucket = await client.query(
        'SELECT 1 FROM buckets WHERE sid = $1 AND account_sid = $2 FOR UPDATE',
        [bucketSid, accountSid],
      );
      if (!bucket.rowCount) throw notFound('Bucket');
      const n = await client.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM endpoint_templates WHERE bucket_sid = $1',
        [bucketSid],
      );
      if (n.rows[0]!.n >= MAX_TEMPLATES_PER_BUCKET)
        throw new AppError(
          409,
          'CONFLICT',
          `A bucket holds at most ${MAX_TEMPLATES_PER_BUCKET} endpoint template rules: delete one first`,
          { limit: MAX_TEMPLATES_PER_BUCKET },
        );
      const r = await client.query<Row>(
        `INSERT INTO endpoint_templates (sid, account_sid, bucket_sid, pattern, shape, method)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
        [newSid('endpointTemplate'), accountSid, bucketSid, input.pattern, shape, methodOf(input.method)],
      );
      await client.query('COMMIT');
      return toTemplate(r.rows[0]!);
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      if (isUniqueViolation(err)) throw duplicate();
      throw err;
    } finally {
      client.release();
    }
  }

  /** Partial update: only the provided fields change (`method: null` = every method). */
  async update(
    accountSid: string,
    bucketSid: string,
    sid: string,
    input: EndpointTemplateUpdate,
  ): Promise<EndpointTemplate> {
    // Another account's (or a missing) rule is a 404 before its body is judged.
    await this.get(accountSid, bucketSid, sid);
    const shape = input.pattern !== undefined ? shapeOf(input.pattern) : null;
    const r = await this.pool
      .query<Row>(
        `UPDATE endpoint_templates
         SET pattern = COALESCE($4, pattern), shape = COALESCE($5, shape),
             method = CASE WHEN $6 THEN $7 ELSE method END, updated_at = now()
         WHERE account_sid = $1 AND bucket_sid = $2 AND sid = $3 RETURNING *`,
        [
          accountSid,
          bucketSid,
          sid,
          input.pattern ?? null,
          shape,
          input.method !== undefined,
          methodOf(input.method),
        ],
      )
      .catch((err: unknown) => {
        throw isUniqueViolation(err) ? duplicate() : err;
      });
    if (!r.rows[0]) throw this.notFound();
    return toTemplate(r.rows[0]);
  }

  /**
   * Suggestions from the bucket's endpoint metrics of the range: one grouped ClickHouse query
   * (requests per endpoint) and the bucket's rules, whose patterns are not offered again.
   */
  async suggestions(
    accountSid: string,
    bucketSid: string,
    range: TimeRange,
    environmentSid: string | undefined,
  ): Promise<{ startDate: string; endDate: string; suggestions: Suggestion[] }> {
    const scope = scopeOf(accountSid, range, {
      bucketSid,
      environmentSid,
      retentionDays: this.retentionDays,
      now: Date.now(),
    });
    const [rs, rules] = await Promise.all([
      this.ch.query({ ...endpointCountsSql(scope, MAX_SUGGESTION_ENDPOINTS), format: 'JSONEachRow' }),
      this.pool.query<{ shape: string }>(
        'SELECT shape FROM endpoint_templates WHERE account_sid = $1 AND bucket_sid = $2 AND method IS NULL',
        [accountSid, bucketSid],
      ),
    ]);
    const rows = await rs.json<{ ep: string; req_n: string | number }>();
    const counts = rows.map((r) => ({ endpoint: r.ep, requests: Number(r.req_n) }));
    const existing = new Set(rules.rows.map((r) => r.shape));
    return { ...rangeOut(range), suggestions: suggestTemplates(counts, existing) };
  }
}
