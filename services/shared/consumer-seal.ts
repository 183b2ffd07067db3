import type { ClickHouseSettings } from '@clickhouse/client';
import type { ClickHouseClient } from './clickhouse.js';
import { TABLES } from './tables.js';

/**
 * The seal of `consumers_rollup`'s day and week blocks (012_consumer_day_blocks_sealed.sql,
 * docs/consumers.md "Storage and cost").
 *
 * consumers_rollup_mv writes a day or week block only when the block has ended at the insert;
 * the rows of a block still open then reach it here, once the block has ended:
 * 1. per ended day, the difference between its hour rows and its day rows, per consumer and
 *    environment, is inserted as day rows (nothing when they agree, so a second run inserts
 *    nothing); then per ended week the same against its day rows;
 * 2. a `level = 0` row of account '' records the instant up to which every day and week block is
 *    complete (`sealedThrough`); the queries read those blocks up to it and hours after it.
 * Counts, sums, the duration histogram and the moments are sums, so the difference makes a
 * block's merged row equal to the sum of its hours; min and max are taken from the hours (a
 * deletion leaves them as it leaves every level).
 *
 * One seal at a time: two computing the same difference would both insert it. The scheduler runs
 * it as a cluster-wide job (one replica per slot, under a Postgres advisory lock).
 */

const DAY = 86_400;
const WEEK = 7 * DAY;
/**
 * How long after a block's end it is sealed, in seconds: an insert whose view read `now()` before
 * the end (and so wrote no row for the block) has committed by then.
 */
export const SEAL_MARGIN_S = 600;
/** Sealed days checked again at the next seal, for an insert that outlasted the margin. */
const RECHECK_DAYS = 2;

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
  /** Days and weeks whose difference was computed. */
  days: number;
  weeks: number;
}

/** The recorded seal instant (unix seconds), or null before the first seal. */
export async function sealedThrough(ch: ClickHouseClient): Promise<number | null> {
  const rs = await ch.query({
    query: `SELECT toUInt32(max(t)) AS s, count() AS n FROM ${TABLES.consumersRollup}
      WHERE account_sid = '' AND bucket_sid = '' AND level = 0`,
    format: 'JSONEachRow',
  });
  const [row] = await rs.json<{ s: number | string; n: number | string }>();
  return row && Number(row.n) > 0 ? Number(row.s) : null;
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

/** Seals the day and week blocks that ended at least SEAL_MARGIN_S ago (see the module comment). */
export async function sealConsumerRollup(ch: ClickHouseClient, opts: SealOptions): Promise<SealResult> {
  const now = Math.floor((opts.now ?? Date.now()) / 1000);
  const target = Math.floor((now - SEAL_MARGIN_S) / DAY) * DAY;
  const kept = Math.ceil((now - opts.retentionDays * DAY) / DAY) * DAY;
  const prev = await sealedThrough(ch);
  if (opts.from === undefined && prev !== null && prev >= target)
    return { sealedThrough: prev, days: 0, weeks: 0 };
  const from = Math.max(kept, opts.from ?? (prev === null ? kept : prev - RECHECK_DAYS * DAY));
  const settings: ClickHouseSettings = {
    // A difference equal to an earlier one is a new row, not a retried block.
    insert_deduplicate: 0,
    ...(opts.cluster ? { distributed_foreground_insert: 1 } : {}),
  };
  const run = (query: string) => ch.command({ query, clickhouse_settings: settings });
  const starts = async (levels: string, width: number, lo: number, hi: number): Promise<number[]> => {
    const rs = await ch.query({
      query: `SELECT DISTINCT intDiv(toUInt32(t), {w:UInt32}) * {w:UInt32} AS b FROM ${TABLES.consumersRollup}
        WHERE level IN (${levels}) AND t >= toDateTime({lo:UInt32}, 'UTC') AND t < toDateTime({hi:UInt32}, 'UTC')
        ORDER BY b`,
      query_params: { w: width, lo, hi },
      format: 'JSONEachRow',
    });
    return (await rs.json<{ b: number | string }>()).map((r) => Number(r.b));
  };

  // Days with an hour or a day row, then the weeks (epoch-aligned, as the view's blocks) that
  // ended after `from`, start within retention (a week block is read only then) and have a day row.
  const days = from < target ? await starts('60, 1440', DAY, from, target) : [];
  for (const d of days) await run(differenceSql(60, 1440, d, d + DAY));
  const weekFrom = Math.max(kept, Math.floor((from - WEEK) / WEEK) * WEEK);
  const weeks = (await starts('1440, 10080', WEEK, weekFrom, target)).filter(
    (w) => w >= kept && w + WEEK > from && w + WEEK <= target,
  );
  for (const w of weeks) await run(differenceSql(1440, 10080, w, w + WEEK));
  if (prev === null || target > prev) {
    await run(
      `INSERT INTO ${TABLES.consumersRollup} (account_sid, bucket_sid, level, t, consumer_id, environment_sid)
       VALUES ('', '', 0, toDateTime(${target}, 'UTC'), '', '')`,
    );
  }
  return { sealedThrough: Math.max(target, prev ?? 0), days: days.length, weeks: weeks.length };
}

/**
 * INSERT of the block [a, b) of level `lv`: per consumer and environment, the sum of the `src`
 * rows inside it less the `lv` rows, where they differ.
 */
function differenceSql(src: number, lv: number, a: number, b: number): string {
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
    SELECT a_sid, b_sid, toUInt16(${lv}), toDateTime(${a}, 'UTC'), c_id, e_sid,
      ${SUMS.map((c) => `d_${c}`).join(', ')}, d_min, d_max, mapFilter((k, v) -> v != 0, d_hist)
    FROM (
      SELECT account_sid AS a_sid, bucket_sid AS b_sid, consumer_id AS c_id, environment_sid AS e_sid,
        ${SUMS.map(signed).join(', ')},
        minIf(duration_min, level = ${src}) AS d_min,
        maxIf(duration_max, level = ${src}) AS d_max,
        sumMap(if(level = ${lv}, mapApply((k, v) -> (k, -v), duration_hist), duration_hist)) AS d_hist
      FROM ${TABLES.consumersRollup}
      WHERE level IN (${src}, ${lv})
        AND t >= toDateTime(${a}, 'UTC') AND t < toDateTime(${b}, 'UTC')
        AND account_sid != ''
      GROUP BY a_sid, b_sid, c_id, e_sid
      HAVING ${COUNTS.map((c) => `d_${c} != 0`).join(' OR ')} OR notEmpty(mapFilter((k, v) -> v != 0, d_hist))
    )`;
}
