import type pg from 'pg';

export interface BucketInfo {
  sid: string;
  accountSid: string;
  name: string;
  appIsConnected: boolean;
}

/**
 * Bucket sid -> owner, cached for the ingest hot path; forgotten on the `tapline_auth` NOTIFY that
 * a change of its owner or name raises. Unknown sids are cached too (briefly) so a flood of bad sids does not
 * become a flood of queries.
 */
export class BucketDirectory {
  private cache = new Map<string, { info: BucketInfo | null; until: number }>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly ttlMs = 30_000,
  ) {}

  /** Forgets one bucket (its NOTIFY), or every bucket when none is named. */
  invalidate(sid?: string): void {
    if (sid === undefined) this.cache.clear();
    else this.cache.delete(sid);
  }

  async get(sid: string): Promise<BucketInfo | null> {
    const now = Date.now();
    const hit = this.cache.get(sid);
    if (hit && hit.until > now) return hit.info;
    const r = await this.pool.query<{
      sid: string;
      account_sid: string;
      name: string;
      app_is_connected: boolean;
    }>('SELECT sid, account_sid, name, app_is_connected FROM buckets WHERE sid = $1', [sid]);
    const row = r.rows[0];
    const info = row
      ? { sid: row.sid, accountSid: row.account_sid, name: row.name, appIsConnected: row.app_is_connected }
      : null;
    if (this.cache.size > 100_000) this.cache.clear();
    this.cache.set(sid, { info, until: now + (info ? this.ttlMs : 2000) });
    return info;
  }

  /** First ingest into a bucket: flip appIsConnected once, not on every call. */
  async markConnected(info: BucketInfo): Promise<void> {
    if (info.appIsConnected) return;
    info.appIsConnected = true;
    await this.pool.query(
      'UPDATE buckets SET app_is_connected = true WHERE sid = $1 AND NOT app_is_connected',
      [info.sid],
    );
  }
}
