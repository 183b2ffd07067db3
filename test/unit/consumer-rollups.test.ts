import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredRecord } from '../../services/processor/pipeline.js';
import { RequestsWriter } from '../../services/processor/requests.writer.js';
import { toRow } from '../../services/processor/row.mapper.js';
import {
  createClickHouse,
  migrateClickHouse,
  type ClickHouseClient,
} from '../../services/shared/clickhouse.js';
import { rebuildMetrics } from '../../services/shared/clickhouse-rebuild.js';
import {
  HOUR_SEAL_MARGIN_S,
  SEAL_MARGIN_S,
  sealConsumerRollup,
  sealedThrough,
  type Sealed,
} from '../../services/shared/consumer-seal.js';
import { consumerStatsSql } from '../../services/api/consumers/consumer-stats.sql.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';

/**
 * The rollups keyed by consumer (008_consumer_and_key_rollups.sql) against a real chDB: every block of
 * every level holds exactly the sums of the minute rows inside it (consumers_minute_all: counts,
 * durations, min/max and the histogram entry by entry), filled by the views and the seal, kept
 * when the migration runs again, rebuilt by rebuild-metrics, and a deleted request leaves them as
 * it leaves the minute rows. Records without a consumer add no rollup row.
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-consumer-rollups-'));
const cfg = embeddedClickHouse(dir);
const log = pino({ level: 'silent' });
let ch: ClickHouseClient;
const NOW = Math.floor(Date.now() / 60_000) * 60_000;

beforeAll(async () => {
  ch = createClickHouse(cfg);
  await migrateClickHouse(ch, cfg, log);
}, 120_000);

afterAll(async () => {
  await ch?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function rows<T>(query: string): Promise<T[]> {
  return (await ch.query({ query, format: 'JSONEachRow' })).json<T>();
}

/** Records over the last 3 days: 5 consumers (every 6th record has none), 2 environments. */
function record(i: number): StoredRecord {
  const consumer = i % 6 === 5 ? undefined : { id: `cus_${i % 5}`, name: `Name ${i % 5}` };
  return {
    sid: `req_${String(i).padStart(27, '0')}`,
    accountSid: 'acc_rollup',
    bucketSid: 'bkt_rollup',
    environmentSid: i % 4 === 0 ? 'stag01' : 'prod01',
    contextSid: null,
    direction: 'in',
    // Spread over 3 days in steps of 7 minutes and 13 s: many minutes, hours and 3-4 UTC days.
    createdAt: new Date(NOW - i * 433_000).toISOString(),
    receivedAt: new Date().toISOString(),
    endpoint: `/v1/things/${i % 3}`,
    request: { method: i % 2 ? 'post' : 'get', host: 'api.example.com', path: `/v1/things/${i}`, body: null },
    response: { statusCode: i % 7 === 0 ? 503 : i % 11 === 0 ? 404 : 200, body: null },
    timings: { duration: 3 + ((i * 37) % 211) * 1.7 },
    tags: [],
    firewall: { blocked: false },
    ...(consumer ? { consumer } : {}),
  } as StoredRecord;
}

/** The row requests.repository.ts delete() writes for a record. */
function deletedRow(r: StoredRecord) {
  const gone = toRow(r, 0, 1);
  return {
    account_sid: gone.account_sid,
    bucket_sid: gone.bucket_sid,
    environment_sid: gone.environment_sid,
    created_at: gone.created_at,
    method: gone.method,
    endpoint: gone.endpoint,
    status_code: gone.status_code,
    duration: gone.duration,
    request_size: gone.request_size,
    response_size: gone.response_size,
    blocked: gone.blocked,
    consumer_id: gone.consumer_id,
  };
}

const SUMS = `toInt64(sum(requests)) AS n, toInt64(sum(errors)) AS e, toInt64(sum(duration_count)) AS dc,
  round(sum(duration_sum), 6) AS ds, min(duration_min) AS dmin, max(duration_max) AS dmax,
  toString(mapFilter((k, v) -> v != 0, sumMap(duration_hist))) AS h`;

/**
 * Per level: the rollup's rows summed per key and block, and the minute rows summed the same way
 * (the block of each minute computed here), both sorted. `keys` are the rollup's key columns
 * besides account, bucket, level and t.
 */
/** Blocks ending at or before `endedBy` (unix seconds) only; every block without it. */
async function compare(
  table: string,
  levels: number[],
  keys: string,
  sums = SUMS,
  endedBy = Number.MAX_SAFE_INTEGER,
): Promise<{ rollup: unknown[]; minute: unknown[] }> {
  const rollup: unknown[] = [];
  const minute: unknown[] = [];
  for (const lv of levels) {
    rollup.push(
      ...(await rows(
        `SELECT ${lv} AS lv, toUInt32(t) AS b, ${keys}, ${sums} FROM ${table}
         WHERE level = ${lv} GROUP BY b, ${keys} HAVING b + ${lv * 60} <= ${endedBy} ORDER BY b, ${keys}`,
      )),
    );
    minute.push(
      ...(await rows(
        `SELECT ${lv} AS lv, intDiv(toUInt32(minute), ${lv * 60}) * ${lv * 60} AS b, ${keys}, ${sums}
         FROM consumers_minute_all GROUP BY b, ${keys} HAVING b + ${lv * 60} <= ${endedBy} ORDER BY b, ${keys}`,
      )),
    );
  }
  return { rollup, minute };
}

/** Every block of `levels` (or those ended by `endedBy`) holds the sums of its minute rows. */
async function expectRollupsEqualMinutes(endedBy?: number, levels = [60, 1440, 10080]): Promise<void> {
  // consumers_rollup also sums the duration moments (009_consumer_duration_moments.sql; the
  // durations are multiples of 0.1 ms, so the sum of squares times 100 is a whole number).
  const perConsumer = await compare(
    'consumers_rollup',
    levels,
    'consumer_id, environment_sid',
    `${SUMS}, toInt64(round(sum(duration_sumsq) * 100)) AS ss, toInt64(sum(sumsq_count)) AS sc`,
    endedBy,
  );
  expect(perConsumer.rollup.length).toBeGreaterThan(0);
  expect(perConsumer.rollup).toEqual(perConsumer.minute);
}

const HOUR = 3_600;
const DAY = 86_400;
/** A seal as if 8 days had passed, checking every block: every day and week block has ended. */
const sealAll = () => sealConsumerRollup(ch, { retentionDays: 30, now: NOW + 8 * DAY * 1000, from: 0 });

async function rowCount(): Promise<number> {
  const [r] = await rows<{ n: number }>('SELECT toInt64(count()) AS n FROM consumers_rollup');
  return Number(r!.n);
}

describe('consumer rollups (008_consumer_and_key_rollups.sql, 009_consumer_duration_moments.sql, 012_consumer_day_blocks_sealed.sql, 014_consumer_hour_blocks_sealed.sql, 015_consumer_minutes_by_hour.sql, chDB)', () => {
  it('hold the sums of the minute rows per consumer and block at every level, from records with a consumer only', async () => {
    const writer = new RequestsWriter(ch);
    const records = Array.from({ length: 600 }, (_, i) => record(i));
    await writer.insert(
      records.slice(0, 300).map((r, i) => toRow(r, 0, i)),
      'unit:rollup:0-299',
    );
    await writer.insert(
      records.slice(300).map((r, i) => toRow(r, 0, 300 + i)),
      'unit:rollup:300-599',
    );
    const withConsumer = records.filter((r) => r.consumer).length;
    const [minute] = await rows<{ n: number }>(
      'SELECT toInt64(sum(requests)) AS n FROM consumers_minute_all',
    );
    expect(Number(minute!.n)).toBe(withConsumer);
    // The view writes an hour, day or week block only when it has ended at the insert.
    const at = Math.floor(Date.now() / 1000);
    const ended = (lv: number) =>
      records.filter((r) => {
        if (!r.consumer) return false;
        const t = Math.floor(Date.parse(r.createdAt) / 1000);
        return (Math.floor(t / (lv * 60)) + 1) * lv * 60 <= at;
      }).length;
    const levels = async () =>
      (
        await rows<{ level: number; n: number }>(
          'SELECT level, toInt64(sum(requests)) AS n FROM consumers_rollup GROUP BY level ORDER BY level',
        )
      ).map((l) => [l.level, Number(l.n)]);
    expect(ended(60)).toBeLessThan(withConsumer);
    expect(ended(1440)).toBeGreaterThan(0);
    expect(ended(1440)).toBeLessThan(withConsumer);
    // No single minutes: those are the minute rows' (015_consumer_minutes_by_hour.sql).
    expect(await levels()).toEqual(
      [
        [60, ended(60)],
        [1440, ended(1440)],
        [10080, ended(10080)],
      ].filter(([, n]) => n! > 0),
    );
    await expectRollupsEqualMinutes(at);
    expect(await sealedThrough(ch)).toEqual({ days: null, hours: null });

    // The seal completes the blocks that ended 2 (hours) and 10 minutes (days, weeks) ago and
    // records the instants.
    const sealed = await sealConsumerRollup(ch, { retentionDays: 30 });
    const midnight = Math.floor((at - SEAL_MARGIN_S) / DAY) * DAY;
    const hour = Math.floor((at - HOUR_SEAL_MARGIN_S) / HOUR) * HOUR;
    expect(sealed.sealedThrough).toBe(midnight);
    expect(sealed.hoursSealedThrough).toBe(hour);
    expect(await sealedThrough(ch)).toEqual({ days: midnight, hours: hour });
    await expectRollupsEqualMinutes(midnight);
    await expectRollupsEqualMinutes(hour, [60]);
    // The queries read the hours after the seal from single minutes: the same figures as from
    // minutes alone, where claiming the current hour sealed would miss its records (a range to the
    // hour's end, so that it holds the whole hour block).
    const scope = {
      accountSid: 'acc_rollup',
      bucketSid: 'bkt_rollup',
      range: { start: NOW - 5 * DAY * 1000, end: (Math.floor(NOW / 1000 / HOUR) + 1) * HOUR * 1000 },
    };
    const answer = async (s: Sealed) =>
      (
        await ch.query({ ...consumerStatsSql({ ...scope, sealed: s }, 30, [], {}), format: 'JSONEachRow' })
      ).json<Record<string, unknown>>();
    const fromMinutes = await answer({ days: null, hours: null });
    expect(await answer({ days: midnight, hours: hour })).toEqual(fromMinutes);
    expect(await answer({ days: midnight, hours: at + 2 * HOUR })).not.toEqual(fromMinutes);
    // Nothing new has ended: the next seal reads nothing.
    expect(await sealConsumerRollup(ch, { retentionDays: 30 })).toEqual({
      sealedThrough: midnight,
      hoursSealedThrough: hour,
      hours: 0,
      days: 0,
      weeks: 0,
    });

    // Once every block has ended, each holds the sums of its minutes; a seal again adds no row.
    const all = await sealAll();
    expect(all.hours).toBeGreaterThanOrEqual(72);
    expect(all.days).toBeGreaterThanOrEqual(3);
    expect(all.weeks).toBeGreaterThanOrEqual(1);
    expect(await levels()).toEqual([
      [0, 0],
      [60, withConsumer],
      [1440, withConsumer],
      [10080, withConsumer],
    ]);
    await expectRollupsEqualMinutes();
    // Merges stopped, so the row count tells whether a seal inserted anything.
    const counted = async (fn: () => Promise<unknown>): Promise<{ before: number; after: number }> => {
      await ch.command({ query: 'SYSTEM STOP MERGES consumers_rollup' });
      try {
        const before = await rowCount();
        await fn();
        return { before, after: await rowCount() };
      } finally {
        await ch.command({ query: 'SYSTEM START MERGES consumers_rollup' });
      }
    };
    const again = await counted(sealAll);
    expect(again.after).toBe(again.before);
    // The check can tell: a day's rows removed are inserted again.
    await ch.command({
      query: `ALTER TABLE consumers_rollup DELETE WHERE level = 1440 AND t = toStartOfDay(fromUnixTimestamp(${Math.floor(NOW / 1000)}))`,
      clickhouse_settings: { mutations_sync: '2' },
    });
    const refilled = await counted(sealAll);
    expect(refilled.after).toBeGreaterThan(refilled.before);
    await expectRollupsEqualMinutes();
  }, 60_000);

  it('answer a range across the seals with the same figures as from single minutes alone', async () => {
    const scope = {
      accountSid: 'acc_rollup',
      bucketSid: 'bkt_rollup',
      range: { start: NOW - 5 * DAY * 1000, end: NOW + 60_000 },
    };
    const answer = async (sealed: Sealed) => {
      const sql = consumerStatsSql({ ...scope, sealed }, 30, [], {});
      return (await ch.query({ ...sql, format: 'JSONEachRow' })).json<Record<string, unknown>>();
    };
    const minutes = await answer({ days: null, hours: null });
    expect(minutes).toHaveLength(5);
    const midnight = Math.floor(NOW / 1000 / DAY) * DAY;
    const hour = Math.floor(NOW / 1000 / HOUR) * HOUR;
    // Hours up to this hour; day blocks up to yesterday's end with hours after; a week block and
    // the whole range.
    for (const sealed of [
      { days: null, hours: hour },
      { days: midnight, hours: hour },
      { days: midnight, hours: midnight },
      { days: Math.floor(NOW / 1000) + 2 * DAY, hours: Math.floor(NOW / 1000) + 2 * DAY },
    ]) {
      expect(await answer(sealed)).toEqual(minutes);
    }
  }, 60_000);

  it('are kept when the migration runs again, rebuilt by rebuild-metrics, and follow a deletion', async () => {
    const before = await compare('consumers_rollup', [60], 'consumer_id');
    await ch.command({
      // The newest migration of these views (it drops and creates them again).
      query: `ALTER TABLE tapline.schema_migrations DELETE WHERE name = '015_consumer_minutes_by_hour.sql'`,
      clickhouse_settings: { mutations_sync: '2' },
    });
    expect(await migrateClickHouse(ch, cfg, log)).toBe(1);
    expect(await compare('consumers_rollup', [60], 'consumer_id')).toEqual(before);
    await expectRollupsEqualMinutes();
    expect((await rebuildMetrics(ch, cfg, log, { marginMs: 0 })).backfilled).toBe(600);
    // The rebuild writes the hours that have ended; the current one comes from the seal below.
    const ended = Math.floor(Date.now() / 1000 / HOUR) * HOUR;
    expect((await compare('consumers_rollup', [60], 'consumer_id', SUMS, ended)).rollup).toEqual(
      before.rollup.filter((r) => {
        const { lv, b } = r as { lv: number; b: number };
        return b + lv * 60 <= ended;
      }),
    );
    // The rebuild writes the blocks that have ended; the seal the others.
    await expectRollupsEqualMinutes(Math.floor(Date.now() / 1000));
    expect(await sealedThrough(ch)).toEqual({ days: null, hours: null });
    await sealAll();
    await expectRollupsEqualMinutes();

    // A deleted request (as requests.repository.ts delete() writes it) leaves every level.
    await ch.insert({ table: 'requests_deleted', values: [deletedRow(record(1))], format: 'JSONEachRow' });
    await sealAll();
    const [n] = await rows<{ n: number }>(
      "SELECT toInt64(sum(requests)) AS n FROM consumers_rollup WHERE level = 1440 AND consumer_id = 'cus_1'",
    );
    const sent = Array.from({ length: 600 }, (_, i) => record(i)).filter(
      (r) => (r.consumer as { id?: string } | undefined)?.id === 'cus_1',
    ).length;
    expect(Number(n!.n)).toBe(sent - 1);
    await expectRollupsEqualMinutes();
  }, 120_000);

  it('take a late record and a deletion of an ended day without a seal', async () => {
    // 10 days back: its day and its week have ended, and no other record is in that day.
    const late: StoredRecord = {
      ...record(0),
      sid: 'req_late00000000000000000000001',
      createdAt: new Date(NOW - 10 * DAY * 1000).toISOString(),
    };
    await new RequestsWriter(ch).insert([toRow(late, 0, 9000)], 'unit:rollup:late');
    const [day] = await rows<{ n: number }>(
      `SELECT toInt64(sum(requests)) AS n FROM consumers_rollup
       WHERE level = 1440 AND t = toStartOfDay(parseDateTimeBestEffort('${late.createdAt}'))`,
    );
    expect(Number(day!.n)).toBe(1);
    await expectRollupsEqualMinutes();
    await ch.insert({ table: 'requests_deleted', values: [deletedRow(late)], format: 'JSONEachRow' });
    await expectRollupsEqualMinutes();
  }, 60_000);
});
