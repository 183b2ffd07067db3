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
import { storeSetRecords } from '../bench/large-set.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';
import { planIndexes } from '../helpers/explain-indexes.js';

/**
 * The skip index of an exact path search (migration 010): on records whose paths carry ids, as
 * real paths do, a search for one path reads the granules that may hold it, not the whole range.
 * Checked with ClickHouse's own account of the read (`EXPLAIN indexes = 1`) on a real chDB.
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-path-index-'));
const ROWS = 200_000;
let ch: ClickHouseClient;

/** The indexes of the plan's read of `requests`. */
const readIndexes = (where: string) =>
  planIndexes(
    ch,
    `SELECT sid FROM requests WHERE account_sid = 'acc_p' AND bucket_sid = 'bkt_p' AND ${where}`,
  );

beforeAll(async () => {
  const cfg = embeddedClickHouse(dir);
  ch = createClickHouse(cfg);
  await migrateClickHouse(ch, cfg, pino({ level: 'silent' }));
  await storeSetRecords(ch, { accountSid: 'acc_p', bucketSid: 'bkt_p' }, ROWS);
}, 120_000);

afterAll(async () => {
  await ch?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('the exact path index', () => {
  it('reads a few granules for one path, and finds its records', async () => {
    const [one] = await (
      await ch.query({
        query: `SELECT path, count() AS n FROM requests GROUP BY path HAVING n = 1 ORDER BY path LIMIT 1`,
        format: 'JSONEachRow',
      })
    ).json<{ path: string }>();
    expect(one?.path).toMatch(/^\/v\d\//);
    const quoted = `'${one!.path.replaceAll("'", "\\'")}'`;

    const skip = (await readIndexes(`path = ${quoted}`)).find((i) => i.Type === 'Skip');
    expect(skip?.Name).toBe('idx_path_value');
    // 200,000 compact records are ~220 granules of at most 1 MiB (migration 016): the search
    // reads the path's own and the filter's false positives, ~1 % of the rest (~2 granules; at
    // most 5 % of them, which a mean of ~2 exceeds about once in 100,000 runs).
    const initial = skip!['Initial Granules'];
    expect(initial).toBeGreaterThanOrEqual(150);
    expect(skip!['Selected Granules']).toBeGreaterThanOrEqual(1);
    expect(skip!['Selected Granules']).toBeLessThanOrEqual(1 + Math.ceil(initial * 0.05));

    const found = await (
      await ch.query({
        query: `SELECT count() AS n FROM requests WHERE account_sid = 'acc_p' AND bucket_sid = 'bkt_p' AND path = ${quoted}`,
        format: 'JSONEachRow',
      })
    ).json<{ n: number }>();
    expect(Number(found[0]?.n)).toBe(1);
  });

  it('replaces the token index, which skipped nothing on paths with ids', async () => {
    const indexes = await (
      await ch.query({
        query: `SELECT name, type FROM system.data_skipping_indices WHERE table = 'requests' ORDER BY name`,
        format: 'JSONEachRow',
      })
    ).json<{ name: string; type: string }>();
    expect(indexes).toEqual([
      { name: 'idx_path_value', type: 'bloom_filter' },
      { name: 'idx_sid', type: 'bloom_filter' },
    ]);
  });
});
