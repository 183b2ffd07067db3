import type { ClickHouseSettings } from '@clickhouse/client';
import type { ClickHouseClient } from './clickhouse.js';
import { TABLES } from './tables.js';

/**
 * The seal of `consumers_rollup`'s hour, day and week blocks (012_consumer_day_blocks_sealed.sql,
 * 014_consumer_hour_blocks_sealed.sql, 015_consumer_minutes_by_hour.sql, docs/consumers.md
 * "Storage and cost").
 *
 * consumers_rollup_mv writes an hour, day or week block only when the block has ended at the
 * insert; the rows of a block still open then reach it here, once the block has ended:
 * 1. per ended hour, the difference between its minute rows (blockSource) and its hour rows, per
 *    consumer and environment, is inserted as hour rows (nothing when they agree, so a second run inserts
 *    nothing); a `level = 0` row of account '' and consumer 'hours' records the instant up to
 *    which every hour block is complete;
 * 2. then per ended day the same between its hour rows and its day rows, and per ended week
 *    against its day rows; a `level = 0` row of account '' and consumer '' records the instant up
 *    to which every day and week block is complete.
 * The queries read day and week blocks up to the second instant, hours up to the first and single
 * minutes after it (sealedThrough). Counts, sums, the duration histogram and the moments are sums,
 * so the difference makes a block's merged row equal to the sum of its sub-blocks; min and max are
 * taken from the sub-blocks (a deletion leaves them as it leaves every level).
 *
 * One seal at a time: two computing the same difference would both insert it. The scheduler runs
 * it as a cluster-wide job (one replica per slot, under a Postgres advisory lock).
 */

const HOUR = 3_600;
const DAY = 86_400;
const WEEK = 7 * DAY;
/**
 * How long after a day or week block's end it is sealed, in seconds: an insert whose view read
 * `now()` before the end (and so wrote no row for the block) has committed by then.
 */
export const SEAL_MARGIN_S = 600;
/**
 * The same for an hour block: shorter, as the queries read single minutes after the last sealed
 * hour. An insert that outlasts it is found by the next hour's seal (RECHECK_HOURS).
 */
export const HOUR_SEAL_MARGIN_S = 120;
/** Sealed days checked again at the next seal, for an insert that outlasted the margin. */
const RECHECK_DAYS = 2;
/** Sealed hours checked again at the next hour's seal. */
const RECHECK_HOURS = 1;
/** The `consumer_id` of the level-0 row recording the hours' seal (the days' has ''). */
const HOURS_MARK = 'hours';

const SUMS = [
  'requests',
  'errors',
  'blocked',
  'bytes',
  'duration_sum',
  'duration_count',
  'duration_sumsq',
  'sumsq_count',
] as const;
/** Sums that are whole numbers: a difference in any of them (or in the histogram) is a missing row. */
const COUNTS = ['requests', 'errors', 'blocked', 'bytes', 'duration_count', 'sumsq_count'] as const;

export interface SealResult {
  /** The instant (unix seconds, a UTC midnight) up to which day and week blocks are complete; null: none. */
  sealedThrough: number | null;
  /** The instant (unix seconds, a full hour) up to which hour blocks are complete; null: none. */
  hoursSealedThrough: number | null;
  /** Hours, days and weeks whose difference was computed. */
  hours: number;
  days: number;
  weeks: number;
}

/** Where the blocks of consumers_rollup are complete (unix seconds; null: not recorded). */
export interface Sealed {
  /** day and week blocks, up to this UTC midnight */
  days: number | null;
  /** hour blocks, up to this full hour */
  hours: number | null;
}

/** The recorded seal instants: null before the first seal (days) or after a rebuild (both). */
export async function sealedThrough(ch: ClickHouseClient): Promise<Sealed> {
  const rs = await ch.query({
    query: `SELECT toUInt32(maxIf(t, consumer_id = '')) AS d, countIf(consumer_id = '') AS dn,
        toUInt32(maxIf(t, consumer_id = {h:String})) AS h, countIf(consumer_id = {h:String}) AS hn
      FROM ${TABLES.consumersRollup}
      WHERE account_sid = '' AND bucket_sid = '' AND level = 0`,
    query_params: { h: HOURS_MARK },
    format: 'JSONEachRow',
  });
  const [row] = await rs.json<{
    d: number | string;
    dn: number | string;
    h: number | string;
    hn: number | string;
  }>();
  return {
    days: row && Number(row.dn) > 0 ? Number(row.d) : null,
    hours: row && Number(row.hn) > 0 ? Number(row.h) : null,
  };
}

export interface SealOptions {
  retentionDays: number;
  /** The clock, in ms (tests move it). */
  now?: number;
  /** Check every block from this instant (unix seconds) on, not only the newly ended ones. */
  from?: number;
  /** A cluster: inserts through the Distributed table return once they are on their shards. */
  cluster?: boolean;
}

/**
 * Seals the hour blocks that ended at least HOUR_SEAL_MARGIN_S ago, then the day and week blocks
 * that ended at least SEAL_MARGIN_S ago (see the module comment).
 */
export async function sealConsumerRollup(ch: ClickHouseClient, opts: SealOptions): Promise<SealResult> {
  const now = Math.floor((opts.now ?? Date.now()) / 1000);
  const hourTarget = Math.floor((now - HOUR_SEAL_MARGIN_S) / HOUR) * HOUR;
  const target = Math.floor((now - SEAL_MARGIN_S) / DAY) * DAY;
  const kept = Math.ceil((now - opts.retentionDays * DAY) / DAY) * DAY;
  const prev = await sealedThrough(ch);
  const result: SealResult = {
    sealedThrough: prev.days,
    hoursSealedThrough: prev.hours,
    hours: 0,
    days: 0,
    weeks: 0,
  };
  const settings: ClickHouseSettings = {
    // A difference equal to an earlier one is a new row, not a retried block.
    insert_deduplicate: 0,
    ...(opts.cluster ? { distributed_foreground_insert: 1 } : {}),
  };
  const run = (query: string) => ch.command({ query, clickhouse_settings: settings });
  /** The starts of the `width`-second blocks holding a row of `source` (blockSource). */
  const starts = async (source: string, width: number): Promise<number[]> => {
    const rs = await ch.query({
      query: `SELECT DISTINCT intDiv(toUInt32(t), {w:UInt32}) * {w:UInt32} AS b FROM (${source}) ORDER BY b`,
      query_params: { w: width },
      format: 'JSONEachRow',
    });
    return (await rs.json<{ b: number | string }>()).map((r) => Number(r.b));
  };
  const mark = (t: number, consumer: string) =>
    run(
      `INSERT INTO ${TABLES.consumersRollup} (account_sid, bucket_sid, level, t, consumer_id, environment_sid)
       VALUES ('', '', 0, toDateTime(${t}, 'UTC'), '${consumer}', '')`,
    );

  // 1. Hours with a minute or an hour row, once per newly ended hour (and the one before again).
  if (opts.from !== undefined || prev.hours === null || hourTarget > prev.hours) {
    // Without an hours' seal (before the first one after 014, or after a rebuild), from the days'
    // seal: the hours before it are complete (written at every insert before 014, or read by it).
    const since = prev.hours ?? prev.days;
    const from = Math.max(kept, opts.from ?? (since === null ? kept : since - RECHECK_HOURS * HOUR));
    const hours = from < hourTarget ? await starts(blockSource(1, 60, from, hourTarget), HOUR) : [];
    // One statement per UTC day of them: its groups are the day's hour rows, which the day's seal
    // reads in one statement too.
    // `hours` is sorted, so each day's first and last hour bound its statement.
    const days = new Map<number, { a: number; b: number }>();
    for (const h of hours) {
      const d = days.get(Math.floor(h / DAY));
      if (d) d.b = h + HOUR;
      else days.set(Math.floor(h / DAY), { a: h, b: h + HOUR });
    }
    for (const { a, b } of days.values()) await run(differenceSql(1, 60, a, b));
    if (prev.hours === null || hourTarget > prev.hours) await mark(hourTarget, HOURS_MARK);
    result.hours = hours.length;
    result.hoursSealedThrough = Math.max(hourTarget, prev.hours ?? 0);
  }

  // 2. Days with an hour or a day row, then the weeks (epoch-aligned, as the view's blocks) that
  // ended after `from`, start within retention (a week block is read only then) and have a day row.
  // Their hours are complete: the hours' seal above reaches past the day's end.
  if (opts.from !== undefined || prev.days === null || target > prev.days) {
    const from = Math.max(kept, opts.from ?? (prev.days === null ? kept : prev.days - RECHECK_DAYS * DAY));
    const days = from < target ? await starts(blockSource(60, 1440, from, target), DAY) : [];
    for (const d of days) await run(differenceSql(60, 1440, d, d + DAY));
    const weekFrom = Math.max(kept, Math.floor((from - WEEK) / WEEK) * WEEK);
    const weeks = (await starts(blockSource(1440, 10080, weekFrom, target), WEEK)).filter(
      (w) => w >= kept && w + WEEK > from && w + WEEK <= target,
    );
    for (const w of weeks) await run(differenceSql(1440, 10080, w, w + WEEK));
    if (prev.days === null || target > prev.days) await mark(target, '');
    result.days = days.length;
    result.weeks = weeks.length;
    result.sealedThrough = Math.max(target, prev.days ?? 0);
  }
  return result;
}

/** The columns of a block row: consumers_rollup's, which the minute rows have too (but `level` and `t`). */
const ROW_COLUMNS = [...SUMS, 'duration_min', 'duration_max', 'duration_hist'].join(', ');

/**
 * The rows of levels `src` and `lv` in [a, b) as consumers_rollup rows (`level`, `t`, the keys and
 * ROW_COLUMNS), the seals' own rows (account '') left out. Level 1, single minutes, is
 * consumers_rollup's own level-1 rows (written by every insert before
 * 015_consumer_minutes_by_hour.sql) and consumers_minute_by_hour's rows (every insert since), as
 * the queries read them (consumer-stats.sql.ts blockRows).
 */
function blockSource(src: number, lv: number, a: number, b: number): string {
  const range = (col: string) => `${col} >= toDateTime(${a}, 'UTC') AND ${col} < toDateTime(${b}, 'UTC')`;
  const rollup = `SELECT account_sid, bucket_sid, level, t, consumer_id, environment_sid, ${ROW_COLUMNS}
      FROM ${TABLES.consumersRollup} WHERE level IN (${src}, ${lv}) AND ${range('t')} AND account_sid != ''`;
  if (src !== 1) return rollup;
  return `${rollup}
    UNION ALL SELECT account_sid, bucket_sid, toUInt16(1) AS level, minute AS t, consumer_id, environment_sid, ${ROW_COLUMNS}
      FROM ${TABLES.consumersMinuteByHour} WHERE ${range('minute')}`;
}

/**
 * INSERT of the blocks of level `lv` in [a, b) (block-aligned): per block, consumer and
 * environment, the sum of the `src` rows inside it less the `lv` rows, where they differ.
 */
function differenceSql(src: number, lv: number, a: number, b: number): string {
  const width = lv * 60;
  const signed = (c: string) => `sum(if(level = ${lv}, -${c}, ${c})) AS d_${c}`;
  const cols = [
    'account_sid',
    'bucket_sid',
    'level',
    't',
    'consumer_id',
    'environment_sid',
    ...SUMS,
    'duration_min',
    'duration_max',
    'duration_hist',
  ];
  return `INSERT INTO ${TABLES.consumersRollup} (${cols.join(', ')})
    SELECT a_sid, b_sid, toUInt16(${lv}), toDateTime(blk, 'UTC'), c_id, e_sid,
      ${SUMS.map((c) => `d_${c}`).join(', ')}, d_min, d_max, mapFilter((k, v) -> v != 0, d_hist)
    FROM (
      SELECT account_sid AS a_sid, bucket_sid AS b_sid, intDiv(toUInt32(t), ${width}) * ${width} AS blk,
        consumer_id AS c_id, environment_sid AS e_sid,
        ${SUMS.map(signed).join(', ')},
        minIf(duration_min, level = ${src}) AS d_min,
        maxIf(duration_max, level = ${src}) AS d_max,
        sumMap(if(level = ${lv}, mapApply((k, v) -> (k, -v), duration_hist), duration_hist)) AS d_hist
      FROM (${blockSource(src, lv, a, b)})
      GROUP BY a_sid, b_sid, blk, c_id, e_sid
      HAVING ${COUNTS.map((c) => `d_${c} != 0`).join(' OR ')} OR notEmpty(mapFilter((k, v) -> v != 0, d_hist))
    )`;
}
