import type pg from 'pg';
import { notFound } from '../shared/errors.js';

/** Window lengths in minutes (docs/releases.md "Windows"). */
export interface ImpactWindows {
  beforeMinutes: number;
  afterMinutes: number;
  settleMinutes: number;
}

export const DEFAULT_WINDOWS: ImpactWindows = { beforeMinutes: 30, afterMinutes: 30, settleMinutes: 2 };

export interface ReleaseSettings extends ImpactWindows {
  bucketSid: string;
  /** null while the bucket uses the defaults */
  updatedAt: string | null;
}

interface Row {
  before_minutes: number;
  after_minutes: number;
  settle_minutes: number;
  updated_at: Date;
}

/**
 * The release impact windows of each bucket (Postgres 023): stored only once set, the defaults
 * otherwise.
 */
export class ReleaseSettingsRepository {
  constructor(private readonly pool: pg.Pool) {}

  async get(accountSid: string, bucketSid: string): Promise<ReleaseSettings> {
    const r = await this.pool.query<Row & { sid: string }>(
      `SELECT b.sid, s.before_minutes, s.after_minutes, s.settle_minutes, s.updated_at
       FROM buckets b LEFT JOIN bucket_release_settings s ON s.bucket_sid = b.sid
       WHERE b.account_sid = $1 AND b.sid = $2`,
      [accountSid, bucketSid],
    );
    const row = r.rows[0];
    if (!row) throw notFound('Bucket');
    if (row.before_minutes === null) return { bucketSid, ...DEFAULT_WINDOWS, updatedAt: null };
    return {
      bucketSid,
      beforeMinutes: row.before_minutes,
      afterMinutes: row.after_minutes,
      settleMinutes: row.settle_minutes,
      updatedAt: row.updated_at.toISOString(),
    };
  }

  async put(accountSid: string, bucketSid: string, w: ImpactWindows): Promise<ReleaseSettings> {
    const r = await this.pool.query(
      `INSERT INTO bucket_release_settings (bucket_sid, account_sid, before_minutes, after_minutes, settle_minutes)
       SELECT sid, account_sid, $3, $4, $5 FROM buckets WHERE account_sid = $1 AND sid = $2
       ON CONFLICT (bucket_sid) DO UPDATE SET before_minutes = EXCLUDED.before_minutes,
         after_minutes = EXCLUDED.after_minutes, settle_minutes = EXCLUDED.settle_minutes, updated_at = now()`,
      [accountSid, bucketSid, w.beforeMinutes, w.afterMinutes, w.settleMinutes],
    );
    if (!r.rowCount) throw notFound('Bucket');
    return this.get(accountSid, bucketSid);
  }

  /**
   * The windows of an analysis over some buckets of an account (null = all of them): each value is
   * the largest among those buckets, a bucket without settings counting with the defaults, so no
   * bucket's window is cut short.
   */
  async windowsFor(accountSid: string, bucketSids: readonly string[] | null): Promise<ImpactWindows> {
    const r = await this.pool.query<{ b: number | null; a: number | null; s: number | null }>(
      `SELECT max(coalesce(s.before_minutes, $3)) AS b, max(coalesce(s.after_minutes, $4)) AS a,
         max(coalesce(s.settle_minutes, $5)) AS s
       FROM buckets b LEFT JOIN bucket_release_settings s ON s.bucket_sid = b.sid
       WHERE b.account_sid = $1 AND ($2::text[] IS NULL OR b.sid = ANY($2::text[]))`,
      [
        accountSid,
        bucketSids,
        DEFAULT_WINDOWS.beforeMinutes,
        DEFAULT_WINDOWS.afterMinutes,
        DEFAULT_WINDOWS.settleMinutes,
      ],
    );
    const row = r.rows[0];
    if (!row || row.b === null || row.a === null || row.s === null) return DEFAULT_WINDOWS;
    return { beforeMinutes: row.b, afterMinutes: row.a, settleMinutes: row.s };
  }
}
