/**
 * Checks, on a throw-away chDB directory (never the service's), that the per-minute aggregates
 * stay exact when:
 *  1. the processor re-sends the same block with the same deduplication token (RequestsWriter);
 *  2. a new block (new token) arrives — it must count;
 *  3. the same request is deleted twice concurrently (RequestsRepository.delete compensates once,
 *     and the deleted duration leaves the percentiles exactly).
 * The service's migrations and writer code are used as they are.
 *
 *   npx tsx test/bench/metrics-dedup-check.ts
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import { RequestsRepository } from '../../services/api/requests/requests.repository.js';
import { RequestsWriter } from '../../services/processor/requests.writer.js';
import type { RequestRow } from '../../services/processor/row.mapper.js';
import { createClickHouse, migrateClickHouse } from '../../services/shared/clickhouse.js';
import { parseConfig } from '../../services/shared/config.js';
import { logger } from '../../services/shared/logger.js';
import { HIST_GRID, MERGE } from '../../services/shared/metrics-sql.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-dedup-'));
const cfg = parseConfig({ ...process.env, DATA_DIR: dir, CLICKHOUSE_URL: '' });
const ch = createClickHouse(cfg.clickhouse);
let failures = 0;
const check = (label: string, actual: unknown, expected: unknown) => {
  const ok = JSON.stringify(actual) === JSON.stringify(expected);
  if (!ok) failures++;
  console.log(
    `${ok ? 'ok  ' : 'FAIL'} ${label}: ${JSON.stringify(actual)}${ok ? '' : ` expected ${JSON.stringify(expected)}`}`,
  );
};

function row(i: number, duration: number): RequestRow {
  return {
    account_sid: 'acc_dedup',
    bucket_sid: 'bkt_dedup',
    sid: `req_${String(i).padStart(27, '0')}`,
    environment_sid: 'prod01',
    context_sid: '',
    direction: 'in',
    created_at: '2026-11-20T10:00:30.000Z',
    received_at: '2026-11-20T10:00:31.000Z',
    created_at_ms: Date.parse('2026-11-20T10:00:30.000Z'),
    received_at_ms: Date.parse('2026-11-20T10:00:31.000Z'),
    method: 'GET',
    host: 'h',
    path: '/a',
    endpoint: '/a',
    status_code: i % 4 === 0 ? 500 : 200,
    duration,
    request_size: 10,
    response_size: 100 + i,
    blocked: 0,
    tags: {},
    record: JSON.stringify({ sid: `req_${String(i).padStart(27, '0')}`, bucketSid: 'bkt_dedup' }),
    kafka_partition: 0,
    kafka_offset: i,
    consumer_id: '',
    consumer_name: '',
    consumer_group: '',
  };
}

async function aggregates() {
  const rs = await ch.query({
    query: `SELECT ${MERGE.requests} AS r, ${MERGE.errors} AS e, ${MERGE.bytes} AS b,
              ${MERGE.durationSum} AS ds, ${MERGE.durationCount} AS dc, ${MERGE.percentiles} AS pct
            FROM requests_minute WHERE account_sid = 'acc_dedup'`,
    format: 'JSONEachRow',
  });
  const [a] = await rs.json<{ r: number; e: number; b: number; ds: number; dc: number; pct: number[] }>();
  return { ...a!, pct: a!.pct.map((x) => Math.round(x * 1000) / 1000) };
}

/**
 * requests_rollup must agree with requests_minute at every level (dimension `all`), in the rows per
 * environment (`env` "!= '*'") and in the rows for all environments together ("= '*'").
 */
async function rollupLevels(env: string) {
  const rs = await ch.query({
    query: `SELECT level, ${MERGE.requests} AS r, ${MERGE.errors} AS e, ${MERGE.bytes} AS b,
              ${MERGE.durationCount} AS dc, ${MERGE.percentiles} AS pct
            FROM requests_rollup WHERE account_sid = 'acc_dedup' AND dim = 'all' AND environment_sid ${env}
            GROUP BY level ORDER BY level`,
    format: 'JSONEachRow',
  });
  const rows = await rs.json<{ level: number; r: number; e: number; b: number; dc: number; pct: number[] }>();
  return rows.map((x) => ({ ...x, pct: x.pct.map((v) => Math.round(v * 1000) / 1000) }));
}

async function checkRollup(label: string) {
  const m = await aggregates();
  const expected = [10, 60, 360, 1440].map((level) => ({
    level,
    r: m.r,
    e: m.e,
    b: m.b,
    dc: m.dc,
    pct: m.pct,
  }));
  check(`${label}: rollup equals requests_minute at every level`, await rollupLevels("!= '*'"), expected);
  check(
    `${label}: all-environments rollup equals requests_minute at every level`,
    await rollupLevels("= '*'"),
    expected,
  );
}

async function exact() {
  const rs = await ch.query({
    query: `SELECT count() AS r, countIf(status_code >= 400) AS e, sum(request_size + response_size) AS b,
              sum(duration) AS ds, count(duration) AS dc,
              arrayMap(x -> round(if(x > 0, exp2(round(log2(x) * ${HIST_GRID}) / ${HIST_GRID}), 0), 3),
                quantilesExact(0.5, 0.95, 0.99)(duration)) AS pct
            FROM requests WHERE account_sid = 'acc_dedup'`,
    format: 'JSONEachRow',
  });
  const [a] = await rs.json<{ r: number; e: number; b: number; ds: number; dc: number; pct: number[] }>();
  return a!;
}

try {
  await migrateClickHouse(ch, cfg.clickhouse, logger('dedup-check'));
  const writer = new RequestsWriter(ch);
  const block1 = Array.from({ length: 100 }, (_, i) => row(i, 1 + i * 1.5));
  const token1 = RequestsWriter.token('traffic.requests', 0, { min: 0, max: 99 });
  await writer.insert(block1, token1);
  const once = await aggregates();
  check('after one insert: aggregates equal the raw rows', once, await exact());
  await writer.insert(block1, token1);
  check('same block re-sent with the same token: unchanged', await aggregates(), once);
  await checkRollup('re-sent block');
  const block2 = Array.from({ length: 50 }, (_, i) => row(100 + i, 200 + i));
  await writer.insert(block2, RequestsWriter.token('traffic.requests', 0, { min: 100, max: 149 }));
  const two = await aggregates();
  check('second block, new token: aggregates equal the raw rows', two, await exact());
  check('raw row count', two.r, 150);

  // The tests' exact percentile (sorted[floor(level * n)]) is ClickHouse's quantileExact, and the
  // API's merged histogram is that same rank's value on the histogram grid (HIST_GRID).
  {
    const rs = await ch.query({
      query: `SELECT groupArray(duration) AS d, quantilesExact(0.5, 0.95, 0.99)(duration) AS q,
                (SELECT ${MERGE.percentiles} FROM requests_minute WHERE account_sid = 'acc_dedup') AS api
              FROM requests WHERE account_sid = 'acc_dedup'`,
      format: 'JSONEachRow',
    });
    const [r] = await rs.json<{ d: number[]; q: number[]; api: number[] }>();
    const sorted = [...r!.d].sort((a, b) => a - b);
    const js = [0.5, 0.95, 0.99].map(
      (l) => sorted[Math.min(sorted.length - 1, Math.floor(l * sorted.length))],
    );
    check('JS sorted[floor(level * n)] equals quantileExact', js, r!.q);
    const grid = (v: number) =>
      Math.round(2 ** (Math.round(Math.log2(v) * HIST_GRID) / HIST_GRID) * 1000) / 1000;
    check(
      'merged digest equals quantileExact on the grid',
      r!.api.map((v) => Math.round(v * 1000) / 1000),
      r!.q.map(grid),
    );
  }
  const pool = { query: async () => ({ rows: [], rowCount: 0 }) } as unknown as pg.Pool;
  const repo = new RequestsRepository(ch, pool);
  const victim = row(7, 0).sid;
  await Promise.all([
    repo.delete('acc_dedup', 'bkt_dedup', victim),
    repo.delete('acc_dedup', 'bkt_dedup', victim),
  ]);
  const after = await aggregates();
  const raw = await exact();
  check('two concurrent deletes of one request: counts/bytes/durations equal the raw rows', after, {
    ...raw,
    ds: after.ds, // float sums in another order; compared below
  });
  check('duration sum within 1e-9', Math.abs(after.ds - raw.ds) < 1e-9, true);
  await checkRollup('after the delete');
  // A delete retried after a crash between its compensating insert and the DELETE: the same
  // insert, same token, twice. Then the same with another token, to show the check can fail.
  const compensate = (token: string, i: number) =>
    ch.command({
      query: `INSERT INTO requests_deleted (account_sid, bucket_sid, environment_sid, created_at, method, endpoint,
                status_code, duration, request_size, response_size, blocked)
              SELECT account_sid, bucket_sid, environment_sid, created_at, method, endpoint, status_code, duration,
                request_size, response_size, blocked FROM requests WHERE sid = {s:String}`,
      query_params: { s: row(i, 0).sid },
      clickhouse_settings: {
        insert_deduplicate: 1,
        insert_deduplication_token: token,
        deduplicate_blocks_in_dependent_materialized_views: 1,
      },
    });
  await compensate('retry-token', 20);
  await compensate('retry-token', 20);
  check('retried compensation with the same token: counted once', (await aggregates()).r, after.r - 1);
  await compensate('another-token', 20);
  check('compensation with another token: counted again (control)', (await aggregates()).r, after.r - 2);
  // The same insert re-sent after the delete (a processor crash replay) stays deduplicated.
  const beforeReplay = await aggregates();
  await writer.insert(block1, token1);
  check('replayed block after a delete: still deduplicated', await aggregates(), beforeReplay);
  await checkRollup('replayed block');
} finally {
  await ch.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
console.log(failures === 0 ? 'ALL CHECKS PASSED' : `${failures} CHECK(S) FAILED`);
process.exitCode = failures === 0 ? 0 : 1;
