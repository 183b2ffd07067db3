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
import { toErrorResponse } from '../../services/shared/http-errors.js';
import { storeSetRecords } from '../bench/large-set.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';

/**
 * CLICKHOUSE_EMBEDDED_MEMORY_BYTES bounds the embedded engine as a whole (its
 * `max_server_memory_usage`, given to chDB when the process opens the directory): work that would
 * take the engine past it fails with the engine's "(total) memory limit exceeded" instead of
 * growing the process, the engine goes on, and the API answers that failure with a 503 in the
 * envelope (the engine is busy; the request is not too large). The engine is the test's own chDB,
 * in a file of its own: the bound is set when a process first opens a directory.
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-engine-memory-'));
const log = pino({ level: 'silent' });
const BOUND = 256 * 1024 * 1024;

let ch: ClickHouseClient;

const load = (from: number, rows: number) =>
  storeSetRecords(ch, { accountSid: 'acc_bound', bucketSid: 'bkt_bound' }, rows, from);

async function count(): Promise<number> {
  const [row] = await (
    await ch.query({
      query: `SELECT count() AS n FROM requests WHERE bucket_sid = 'bkt_bound'`,
      format: 'JSONEachRow',
    })
  ).json<{ n: number }>();
  return Number(row?.n);
}

beforeAll(async () => {
  const chCfg = { ...embeddedClickHouse(dir), embeddedMemoryBytes: BOUND };
  ch = createClickHouse(chCfg);
  await migrateClickHouse(ch, chCfg, log);
}, 120_000);

afterAll(async () => {
  await ch?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('the embedded engine at its memory bound', () => {
  it('runs with the configured bound', async () => {
    const rows = await (
      await ch.query({
        query: `SELECT value FROM system.server_settings WHERE name = 'max_server_memory_usage'`,
        format: 'JSONEachRow',
      })
    ).json<{ value: string }>();
    expect(rows).toEqual([{ value: String(BOUND) }]);
  });

  it('refuses work past it (the API says 503) and goes on with work within it', async () => {
    // 200,000 records through the materialized views in one statement need more than the bound.
    const err = await load(0, 200_000).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/\(total\) memory limit exceeded/);
    expect(toErrorResponse(err)).toEqual({
      status: 503,
      code: 'SERVICE_UNAVAILABLE',
      message: 'ClickHouse is at its memory bound with other work: retry shortly',
      details: { query: 'the engine is at its total memory limit' },
    });
    // Nothing of the refused statement was kept, and a small one is stored whole.
    expect(await count()).toBe(0);
    await load(0, 1_000);
    expect(await count()).toBe(1_000);
  }, 120_000);
});
