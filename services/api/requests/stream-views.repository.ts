import type pg from 'pg';
import { newSid } from '../../shared/ids.js';
import { compileCriteria } from './criteria.compiler.js';
import { rethrowBadValue } from '../events/events.repository.js';
import { BucketTable } from '../tables/account-table.js';
import { iso, listPage, type ListQuery, type ListResult } from '../tables/pagination.js';

/** Stream view as the API answers it (docs/search.md). Views are deleted for good, so `deletedAt` is null. */
export interface StreamView {
  sid: string;
  accountSid: string;
  bucketSid: string;
  name: string;
  criteria: string;
  icon: string;
  createdAt: string;
  updatedAt: string | null;
  deletedAt: null;
}

export interface StreamViewInput {
  name?: string;
  criteria?: string;
  icon?: string;
}

interface Row {
  sid: string;
  account_sid: string;
  bucket_sid: string;
  name: string;
  criteria: string;
  icon: string;
  created_at: Date;
  updated_at: Date | null;
}

const toView = (r: Row): StreamView => ({
  sid: r.sid,
  accountSid: r.account_sid,
  bucketSid: r.bucket_sid,
  name: r.name,
  criteria: r.criteria,
  icon: r.icon,
  createdAt: r.created_at.toISOString(),
  updatedAt: iso(r.updated_at),
  deletedAt: null,
});

export const STREAM_VIEW_SORTS = ['createdAt', 'name'] as const;

/** Every query filters by account and bucket: a view of another bucket or account is a 404. */
export class StreamViewsRepository extends BucketTable<Row, StreamView> {
  constructor(pool: pg.Pool) {
    super(pool, { table: 'stream_views', kind: 'streamView', what: 'Stream view', map: toView });
  }

  list(accountSid: string, bucketSid: string, q: ListQuery): Promise<ListResult<StreamView>> {
    return listPage(
      this.pool,
      {
        select: 'SELECT * FROM stream_views',
        where: 'account_sid = $1 AND bucket_sid = $2',
        values: [accountSid, bucketSid],
        sorts: { createdAt: 'created_at', name: 'name' },
      },
      q,
      toView,
    );
  }

  async create(
    accountSid: string,
    bucketSid: string,
    input: { name: string; criteria: string; icon?: string },
  ): Promise<StreamView> {
    compileCriteria(input.criteria, { field: 'body.criteria' });
    const r = await this.pool
      .query<Row>(
        `INSERT INTO stream_views (sid, account_sid, bucket_sid, name, criteria, icon)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
        [newSid('streamView'), accountSid, bucketSid, input.name, input.criteria, input.icon ?? 'search'],
      )
      .catch(rethrowBadValue);
    return toView(r.rows[0]!);
  }

  /** Partial update: only the provided fields change; new criteria must compile. */
  async update(
    accountSid: string,
    bucketSid: string,
    sid: string,
    input: StreamViewInput,
  ): Promise<StreamView> {
    this.requireSid(sid);
    if (input.criteria !== undefined) compileCriteria(input.criteria, { field: 'body.criteria' });
    const r = await this.pool
      .query<Row>(
        `UPDATE stream_views SET name = COALESCE($4, name), criteria = COALESCE($5, criteria),
                icon = COALESCE($6, icon), updated_at = now()
         WHERE account_sid = $1 AND bucket_sid = $2 AND sid = $3 RETURNING *`,
        [accountSid, bucketSid, sid, input.name ?? null, input.criteria ?? null, input.icon ?? null],
      )
      .catch(rethrowBadValue);
    if (!r.rows[0]) throw this.notFound();
    return toView(r.rows[0]);
  }
}
