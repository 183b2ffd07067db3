import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClickHouse,
  migrateClickHouse,
  type ClickHouseClient,
} from '../../services/shared/clickhouse.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';
import { planIndexes } from '../helpers/explain-indexes.js';

/**
 * consumers_rollup's key (block, then consumer) finds one consumer's rows in every block of a range
 * (migration 011 reads a consumer's figures from it): ClickHouse's generic exclusion search keeps
 * the granules of each block whose span of ids holds the consumer, not every consumer's rows of
 * the range. The minute rows' key (hour, then consumer: 015_consumer_minutes_by_hour.sql) does the
 * same per hour, and reads a minute range of every consumer from that range's hours only. Checked
 * with ClickHouse's own account of the read (`EXPLAIN indexes = 1`) on a real chDB, for one
 * consumer and for a list page's consumers over blocks of several lengths.
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-consumer-index-'));
const DAYS = 20;
const CONSUMERS = 5000;
const DAY = 86_400;
const first = Math.floor(Date.now() / 1000 / DAY) * DAY - DAYS * DAY;
const HOURS = 20;
const firstHour = Math.floor(Date.now() / 1000 / 3600) * 3600 - HOURS * 3600;
let ch: ClickHouseClient;

const where = (id: string) =>
  `account_sid = 'acc_c' AND bucket_sid = 'bkt_c' AND level = 1440 AND t >= toDateTime(${first}, 'UTC') AND t <= toDateTime(${first + (DAYS - 1) * DAY}, 'UTC') AND consumer_id = '${id}'`;

beforeAll(async () => {
  const cfg = embeddedClickHouse(dir);
  ch = createClickHouse(cfg);
  await migrateClickHouse(ch, cfg, pino({ level: 'silent' }));
  // A day block per consumer and day: consumer k made 1 + k % 3 calls each day.
  await ch.command({
    query: `INSERT INTO consumers_rollup (account_sid, bucket_sid, level, t, consumer_id, environment_sid, requests)
            SELECT 'acc_c', 'bkt_c', 1440, toDateTime(${first} + intDiv(number, ${CONSUMERS}) * ${DAY}, 'UTC'),
                   concat('cus_', leftPad(toString(number % ${CONSUMERS}), 5, '0')), 'prod01', 1 + (number % ${CONSUMERS}) % 3
            FROM numbers(${DAYS * CONSUMERS})`,
  });
  await ch.command({ query: 'OPTIMIZE TABLE consumers_rollup FINAL' });
  // A minute row per consumer and hour over the last HOURS hours: consumer k called at minute k % 60.
  await ch.command({
    query: `INSERT INTO consumers_minute_by_hour (account_sid, bucket_sid, consumer_id, minute, environment_sid, method, status_code, endpoint, requests)
            SELECT 'acc_m', 'bkt_c', concat('cus_', leftPad(toString(number % ${CONSUMERS}), 5, '0')),
                   toDateTime(${firstHour} + intDiv(number, ${CONSUMERS}) * 3600 + (number % ${CONSUMERS}) % 60 * 60, 'UTC'),
                   'prod01', 'GET', 200, '/v1/things', 1
            FROM numbers(${HOURS * CONSUMERS})`,
  });
  await ch.command({ query: 'OPTIMIZE TABLE consumers_minute_by_hour FINAL' });
}, 120_000);

afterAll(async () => {
  await ch?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("consumers_rollup's key", () => {
  it("reads about one granule per block for one consumer, and sums that consumer's rows", async () => {
    const indexes = await planIndexes(
      ch,
      `SELECT sum(requests) FROM consumers_rollup WHERE ${where('cus_00042')}`,
    );
    const primary = indexes.find((i) => i.Type === 'PrimaryKey');
    // 100,000 rows in granules of 1,024 (~5 per day block): one or two per block hold cus_00042.
    expect(primary!['Initial Granules']).toBeGreaterThanOrEqual(95);
    expect(primary!['Selected Granules']).toBeGreaterThanOrEqual(DAYS);
    expect(primary!['Selected Granules']).toBeLessThanOrEqual(2 * DAYS);

    const [row] = await (
      await ch.query({
        query: `SELECT toInt64(sum(requests)) AS n, count() AS blocks FROM consumers_rollup WHERE ${where('cus_00042')}`,
        format: 'JSONEachRow',
      })
    ).json<{ n: string; blocks: string }>();
    expect(Number(row!.blocks)).toBe(DAYS);
    expect(Number(row!.n)).toBe(DAYS * (1 + (42 % 3)));
  });

  it('finds a list of consumers in blocks of several lengths as the figures read them', async () => {
    const range = (level: number, from: number, to: number) =>
      `(level = ${level} AND t >= toDateTime(${from}, 'UTC') AND t <= toDateTime(${to}, 'UTC'))`;
    const blocks = [
      range(10080, first, first + 7 * DAY),
      range(1440, first, first + (DAYS - 1) * DAY),
      range(60, first, first + 3600),
    ];
    const indexes = await planIndexes(
      ch,
      `SELECT sum(requests) FROM consumers_rollup WHERE account_sid = 'acc_c' AND bucket_sid = 'bkt_c'
         AND (${blocks.join(' OR ')}) AND consumer_id IN ('cus_00042', 'cus_03000')`,
    );
    const primary = indexes.find((i) => i.Type === 'PrimaryKey');
    expect(primary!['Initial Granules']).toBeGreaterThanOrEqual(95);
    // Two consumers in 20 day blocks (the week and hour blocks hold no rows here).
    expect(primary!['Selected Granules']).toBeGreaterThanOrEqual(2 * DAYS);
    expect(primary!['Selected Granules']).toBeLessThanOrEqual(4 * DAYS);
  });
});

describe("the minute rows' key (015_consumer_minutes_by_hour.sql)", () => {
  // Another account than the rollup's rows above: the view writes the ended hours' blocks.
  const hours = `account_sid = 'acc_m' AND bucket_sid = 'bkt_c'
    AND minute >= toDateTime(${firstHour}, 'UTC') AND minute < toDateTime(${firstHour + HOURS * 3600}, 'UTC')`;

  it("reads about one granule per hour for one consumer, and sums that consumer's rows", async () => {
    const sql = `FROM consumers_minute_by_hour WHERE ${hours} AND consumer_id = 'cus_00042'`;
    const primary = (await planIndexes(ch, `SELECT sum(requests) ${sql}`)).find(
      (i) => i.Type === 'PrimaryKey',
    );
    // 100,000 rows in granules of 1,024 (~5 per hour): one or two per hour hold cus_00042.
    expect(primary!['Initial Granules']).toBeGreaterThanOrEqual(95);
    expect(primary!['Selected Granules']).toBeGreaterThanOrEqual(HOURS);
    expect(primary!['Selected Granules']).toBeLessThanOrEqual(2 * HOURS);
    // Read through the table of both minute tables, as the queries do: the same rows.
    const [row] = await (
      await ch.query({
        query: `SELECT toInt64(sum(requests)) AS n FROM consumers_minute_all WHERE ${hours} AND consumer_id = 'cus_00042'`,
        format: 'JSONEachRow',
      })
    ).json<{ n: string }>();
    expect(Number(row!.n)).toBe(HOURS);
  });

  it("reads a minute range of every consumer from that range's hours only", async () => {
    const last = firstHour + (HOURS - 1) * 3600;
    const indexes = await planIndexes(
      ch,
      `SELECT consumer_id, sum(requests) FROM consumers_minute_by_hour
       WHERE account_sid = 'acc_m' AND bucket_sid = 'bkt_c'
         AND minute >= toDateTime(${last + 600}, 'UTC') AND minute <= toDateTime(${last + 1200}, 'UTC')
       GROUP BY consumer_id`,
    );
    const primary = indexes.find((i) => i.Type === 'PrimaryKey');
    expect(primary!['Initial Granules']).toBeGreaterThanOrEqual(95);
    // The last hour's granules (~5 of them), not the other 19 hours'.
    expect(primary!['Selected Granules']).toBeLessThanOrEqual(7);
    expect(primary!['Selected Granules']).toBeGreaterThanOrEqual(4);
  });
});
