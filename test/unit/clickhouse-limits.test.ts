import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  QUERY_LIMITS,
  createClickHouse,
  withQuerySettings,
  type ClickHouseClient,
} from '../../services/shared/clickhouse.js';
import { toErrorResponse } from '../../services/shared/http-errors.js';

/**
 * Issue 14 point 12: every ClickHouse query class has a time and a memory limit (QUERY_LIMITS):
 * an API read that would run for minutes or take gigabytes stops at its limit, and the API
 * answers it as a 400 naming the limit, not a 500.
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-chlimits-'));
let ch: ClickHouseClient;

beforeAll(() => {
  ch = createClickHouse({
    url: undefined,
    path: dir,
    database: 'tapline',
    user: 'default',
    password: '',
    retentionDays: 30,
    mode: 'embedded',
    httpPort: 0,
    tcpPort: 0,
  });
});

afterAll(async () => {
  await ch?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('the query did not fail');
}

describe('ClickHouse query limits', () => {
  it('every class has a time and a memory limit', () => {
    for (const [name, s] of Object.entries(QUERY_LIMITS)) {
      expect(s.max_execution_time, name).toBeGreaterThan(0);
      expect(Number(s.max_memory_usage), name).toBeGreaterThan(0);
    }
    expect(QUERY_LIMITS.api.max_execution_time).toBeLessThanOrEqual(60);
  });

  it('an API read that runs too long stops at its time limit and answers 400', async () => {
    const api = withQuerySettings(ch, { ...QUERY_LIMITS.api, max_execution_time: 1 });
    const t0 = Date.now();
    const err = await failure(
      api
        .query({
          query: 'SELECT count() FROM numbers(100000000000) WHERE sipHash64(number) = 1',
          format: 'JSONEachRow',
        })
        .then((r) => r.json()),
    );
    expect(Date.now() - t0).toBeLessThan(15_000);
    const res = toErrorResponse(err);
    expect(res.status).toBe(400);
    expect(res.message).toMatch(/limit/i);
  }, 60_000);

  it('an API read that needs too much memory stops at its memory limit and answers 400', async () => {
    const api = withQuerySettings(ch, { ...QUERY_LIMITS.api, max_memory_usage: '50000000' });
    const err = await failure(
      api
        .query({ query: 'SELECT length(groupArray(number)) FROM numbers(200000000)', format: 'JSONEachRow' })
        .then((r) => r.json()),
    );
    expect(toErrorResponse(err).status).toBe(400);
  }, 60_000);

  it('settings given with a query win over the class defaults', async () => {
    const api = withQuerySettings(ch, QUERY_LIMITS.api);
    const rows = await (
      await api.query({
        query: "SELECT getSetting('max_execution_time') AS t, getSetting('max_memory_usage') AS m",
        format: 'JSONEachRow',
        clickhouse_settings: { max_execution_time: 7 },
      })
    ).json<{ t: number; m: number | string }>();
    expect(Number(rows[0]!.t)).toBe(7);
    expect(Number(rows[0]!.m)).toBe(Number(QUERY_LIMITS.api.max_memory_usage));
  });
});
