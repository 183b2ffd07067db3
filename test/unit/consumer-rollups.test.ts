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
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';

/**
 * The rollups keyed by consumer (008_consumer_and_key_rollups.sql) against a real chDB: every block of
 * every level holds exactly the sums of the consumers_minute rows inside it (counts, durations,
 * min/max and the histogram entry by entry), filled by the views as records arrive, kept when the
 * migration runs again, rebuilt by rebuild-metrics, and a deleted request leaves them as it leaves
 * consumers_minute. Records without a consumer add no rollup row.
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

const SUMS = `toInt64(sum(requests)) AS n, toInt64(sum(errors)) AS e, toInt64(sum(duration_count)) AS dc,
  round(sum(duration_sum), 6) AS ds, min(duration_min) AS dmin, max(duration_max) AS dmax,
  toString(mapFilter((k, v) -> v != 0, sumMap(duration_hist))) AS h`;

/**
 * Per level: the rollup's rows summed per key and block, and consumers_minute summed the same way
 * (the block of each minute computed here), both sorted. `keys` are the rollup's key columns
 * besides account, bucket, level and t.
 */
async function compare(
  table: string,
  levels: number[],
  keys: string,
  sums = SUMS,
): Promise<{ rollup: unknown[]; minute: unknown[] }> {
  const rollup: unknown[] = [];
  const minute: unknown[] = [];
  for (const lv of levels) {
    rollup.push(
      ...(await rows(
        `SELECT ${lv} AS lv, toUInt32(t) AS b, ${keys}, ${sums} FROM ${table}
         WHERE level = ${lv} GROUP BY b, ${keys} ORDER BY b, ${keys}`,
      )),
    );
    minute.push(
      ...(await rows(
        `SELECT ${lv} AS lv, intDiv(toUInt32(minute), ${lv * 60}) * ${lv * 60} AS b, ${keys}, ${sums}
         FROM consumers_minute GROUP BY b, ${keys} ORDER BY b, ${keys}`,
      )),
    );
  }
  return { rollup, minute };
}

async function expectRollupsEqualMinutes(): Promise<void> {
  // consumers_rollup also sums the duration moments (009_consumer_duration_moments.sql; the
  // durations are multiples of 0.1 ms, so the sum of squares times 100 is a whole number).
  const perConsumer = await compare(
    'consumers_rollup',
    [1, 60, 1440, 10080],
    'consumer_id, environment_sid',
    `${SUMS}, toInt64(round(sum(duration_sumsq) * 100)) AS ss, toInt64(sum(sumsq_count)) AS sc`,
  );
  expect(perConsumer.rollup.length).toBeGreaterThan(0);
  expect(perConsumer.rollup).toEqual(perConsumer.minute);
}

describe('consumer rollups (008_consumer_and_key_rollups.sql, 009_consumer_duration_moments.sql, chDB)', () => {
  it('hold the sums of consumers_minute per consumer and block at every level, from records with a consumer only', async () => {
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
    const [minute] = await rows<{ n: number }>('SELECT toInt64(sum(requests)) AS n FROM consumers_minute');
    expect(Number(minute!.n)).toBe(withConsumer);
    const levels = await rows<{ level: number; n: number }>(
      'SELECT level, toInt64(sum(requests)) AS n FROM consumers_rollup GROUP BY level ORDER BY level',
    );
    expect(levels.map((l) => [l.level, Number(l.n)])).toEqual([
      [1, withConsumer],
      [60, withConsumer],
      [1440, withConsumer],
      [10080, withConsumer],
    ]);
    await expectRollupsEqualMinutes();
  }, 60_000);

  it('are kept when the migration runs again, rebuilt by rebuild-metrics, and follow a deletion', async () => {
    const before = await compare('consumers_rollup', [1, 60], 'consumer_id');
    await ch.command({
      // The newest migration of these views (it drops and creates them again).
      query: `ALTER TABLE tapline.schema_migrations DELETE WHERE name = '009_consumer_duration_moments.sql'`,
      clickhouse_settings: { mutations_sync: '2' },
    });
    expect(await migrateClickHouse(ch, cfg, log)).toBe(1);
    expect(await compare('consumers_rollup', [1, 60], 'consumer_id')).toEqual(before);
    await expectRollupsEqualMinutes();
    expect((await rebuildMetrics(ch, cfg, log, { marginMs: 0 })).backfilled).toBe(600);
    expect(await compare('consumers_rollup', [1, 60], 'consumer_id')).toEqual(before);
    await expectRollupsEqualMinutes();

    // A deleted request (as requests.repository.ts delete() writes it) leaves every level.
    const gone = toRow(record(1), 0, 1);
    await ch.insert({
      table: 'requests_deleted',
      values: [
        {
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
        },
      ],
      format: 'JSONEachRow',
    });
    const [n] = await rows<{ n: number }>(
      "SELECT toInt64(sum(requests)) AS n FROM consumers_rollup WHERE level = 1440 AND consumer_id = 'cus_1'",
    );
    const sent = Array.from({ length: 600 }, (_, i) => record(i)).filter(
      (r) => (r.consumer as { id?: string } | undefined)?.id === 'cus_1',
    ).length;
    expect(Number(n!.n)).toBe(sent - 1);
    await expectRollupsEqualMinutes();
  }, 120_000);
});
