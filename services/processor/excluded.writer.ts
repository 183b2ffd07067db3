import type { ClickHouseClient } from '../shared/clickhouse.js';
import { TABLES } from '../shared/tables.js';

export interface ExcludedCount {
  accountSid: string;
  bucketSid: string;
  /** start of the minute of the records' createdAt, unix seconds */
  minute: number;
  excluded: number;
}

/**
 * Counts of records dropped by exclusion rules, written once per Kafka block beside the block's
 * request rows. The insert carries the block's token + ':excluded', so a block re-sent after a
 * crash (same token) is not counted twice (table `excluded_minute`, 003_excluded.sql).
 */
export class ExcludedWriter {
  constructor(private readonly ch: ClickHouseClient) {}

  async insert(counts: ExcludedCount[], blockToken: string): Promise<void> {
    if (counts.length === 0) return;
    await this.ch.insert({
      table: TABLES.excludedMinute,
      values: counts.map((c) => ({
        account_sid: c.accountSid,
        bucket_sid: c.bucketSid,
        minute: c.minute,
        excluded: c.excluded,
      })),
      format: 'JSONEachRow',
      clickhouse_settings: {
        insert_deduplicate: 1,
        insert_deduplication_token: `${blockToken}:excluded`,
        async_insert: 0,
      },
    });
  }
}

/** Adds one excluded record to a block's counts (keyed by account, bucket and minute). */
export function countExcluded(
  counts: Map<string, ExcludedCount>,
  accountSid: string,
  bucketSid: string,
  createdAt: unknown,
): void {
  const t = typeof createdAt === 'string' ? Date.parse(createdAt) : NaN;
  const minute = Math.floor((Number.isFinite(t) ? t : Date.now()) / 60_000) * 60;
  const key = `${accountSid}\u0000${bucketSid}\u0000${minute}`;
  const c = counts.get(key);
  if (c) c.excluded++;
  else counts.set(key, { accountSid, bucketSid, minute, excluded: 1 });
}
