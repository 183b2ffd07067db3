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

/**
 * A processor's block is written into `requests` as a compact part (migration 013): one data file
 * for every column, so the writer holds one file's buffers rather than two per column. Checked on
 * a real chDB with a block past ClickHouse's default 10 MB threshold for a wide part.
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-part-type-'));
let ch: ClickHouseClient;

beforeAll(async () => {
  const cfg = embeddedClickHouse(dir);
  ch = createClickHouse(cfg);
  await migrateClickHouse(ch, cfg, pino({ level: 'silent' }));
}, 120_000);

afterAll(async () => {
  await ch?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('requests parts', () => {
  it('writes a block of 4,000 records (~12 MB of columns) as one compact part', async () => {
    await ch.command({
      query: `INSERT INTO requests (account_sid, bucket_sid, sid, environment_sid, created_at, received_at,
                method, endpoint, status_code, duration, record)
              SELECT 'acc_p', 'bkt_p', 'req_' || toString(number), 'prod01',
                now64(3) - number, now64(3), 'GET', '/v1/things', 200, number % 250,
                concat('{"n":', toString(number), ',"pad":"', randomPrintableASCII(3000), '"}')
              FROM numbers(4000)`,
      clickhouse_settings: { insert_deduplicate: 0, max_partitions_per_insert_block: '0' },
    });
    const parts = await (
      await ch.query({
        query: `SELECT part_type, sum(rows) AS rows, sum(data_uncompressed_bytes) AS bytes
                FROM system.parts WHERE database = currentDatabase() AND table = 'requests' AND active
                GROUP BY part_type`,
        format: 'JSONEachRow',
      })
    ).json<{ part_type: string; rows: number | string; bytes: number | string }>();
    expect(parts.map((p) => p.part_type)).toEqual(['Compact']);
    expect(Number(parts[0]!.rows)).toBe(4000);
    expect(Number(parts[0]!.bytes)).toBeGreaterThan(10 * 1024 * 1024);
  }, 60_000);
});
