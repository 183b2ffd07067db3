import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BOUND_COLUMNS,
  P95_LOWER_BOUND,
  P95_UPPER_BOUND,
  consumerSource,
} from '../../services/api/consumers/consumer-stats.sql.js';
import { resolveRange } from '../../services/api/metrics/metrics-range.js';
import type { StoredRecord } from '../../services/processor/pipeline.js';
import { RequestsWriter } from '../../services/processor/requests.writer.js';
import { toRow } from '../../services/processor/row.mapper.js';
import {
  createClickHouse,
  migrateClickHouse,
  type ClickHouseClient,
} from '../../services/shared/clickhouse.js';
import { MERGE } from '../../services/shared/metrics-sql.js';
import { REQUESTS_DELETED_COLUMNS } from '../../services/shared/requests-row.js';
import { TABLES } from '../../services/shared/tables.js';
import { rng } from '../bench/records.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';

/**
 * The bounds of a consumer's p95 that the consumers list sorted by p95 picks its candidates by
 * (consumer-stats.sql.ts P95_UPPER_BOUND / P95_LOWER_BOUND), against a real chDB: for every
 * consumer, from 1 to 1,500 calls with heavy-tailed durations over two days, the lower bound ≤ the
 * p95 the list answers ≤ the upper bound. A bound below a consumer's p95 would leave it out of a
 * page it belongs on. Some consumers had their slowest call deleted (the aggregates keep its
 * max), and some have minute rows written without the duration moments, as rows aggregated before
 * 009_consumer_duration_moments.sql are: each case must fall back to a bound that holds.
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-p95-bounds-'));
const cfg = embeddedClickHouse(dir);
let ch: ClickHouseClient;
const NOW = Date.now();
const ACCOUNT = 'acc_p95bounds';
const BUCKET = 'bkt_p95bounds';
const CONSUMERS = 400;
/** Consumers whose slowest call is deleted. */
const deletedFrom = (c: number) => c % 7 === 3;
/** Consumers with a minute row of ten 5-second calls aggregated without the moments. */
const withOldRows = (c: number) => c % 11 === 4;

beforeAll(async () => {
  ch = createClickHouse(cfg);
  await migrateClickHouse(ch, cfg, pino({ level: 'silent' }));
  const r = rng(42);
  const records: StoredRecord[] = [];
  for (let c = 0; c < CONSUMERS; c++) {
    // Five busy consumers (1,500 calls), the others 1 to 60.
    const calls = c < 5 ? 1500 : 1 + ((c * 7) % 60);
    for (let k = 0; k < calls; k++) {
      // Log-normal-like durations (a few very slow calls), some calls without a duration, and
      // every fifth consumer with all its calls in one minute (a single block).
      const u = Math.max(r(), 1e-9);
      const duration =
        k % 23 === 22
          ? undefined
          : Math.round(
              40 * Math.exp(1.4 * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * r())) * 1000,
            ) / 1000;
      const at = c % 5 === 0 ? NOW - 3_600_000 : NOW - Math.floor(r() * 2 * 86_400_000);
      records.push({
        sid: `req_${String(records.length).padStart(27, '0')}`,
        accountSid: ACCOUNT,
        bucketSid: BUCKET,
        environmentSid: 'prod01',
        contextSid: null,
        direction: 'in',
        createdAt: new Date(at).toISOString(),
        receivedAt: new Date().toISOString(),
        endpoint: `/v1/things/{id}`,
        request: { method: 'get', host: 'api.example.com', path: `/v1/things/${k}`, body: null },
        response: { statusCode: 200, body: null },
        timings: duration === undefined ? {} : { duration },
        tags: [],
        firewall: { blocked: false },
        consumer: { id: `cus_${c}` },
      } as StoredRecord);
    }
  }
  const writer = new RequestsWriter(ch);
  for (let i = 0; i < records.length; i += 1000)
    await writer.insert(
      records.slice(i, i + 1000).map((rec, j) => toRow(rec, 0, i + j)),
      `unit:p95-bounds:${i}`,
    );
  // The slowest call of some consumers deleted, as RequestsRepository.delete does it (all in one
  // statement each).
  const victims = Array.from({ length: CONSUMERS }, (_, c) => `cus_${c}`).filter((_, c) => deletedFrom(c));
  const match = `account_sid = {a:String} AND sid IN (SELECT argMax(sid, duration) FROM ${TABLES.requests}
    WHERE account_sid = {a:String} AND consumer_id IN {v:Array(String)} GROUP BY consumer_id)`;
  await ch.command({
    query: `INSERT INTO ${TABLES.requestsDeleted} (${REQUESTS_DELETED_COLUMNS}) SELECT ${REQUESTS_DELETED_COLUMNS} FROM ${TABLES.requests} WHERE ${match}`,
    query_params: { a: ACCOUNT, v: victims },
  });
  await ch.command({
    query: `DELETE FROM ${TABLES.requests} WHERE ${match}`,
    query_params: { a: ACCOUNT, v: victims },
  });
  // Minute rows without the moments (columns left at their default 0), a minute ago, in the table
  // rows were written to before 009 (and 015).
  const minute = Math.floor((NOW - 60_000) / 60_000) * 60;
  const old = [];
  for (let c = 0; c < CONSUMERS; c++)
    if (withOldRows(c))
      old.push(
        `('${ACCOUNT}', '${BUCKET}', 'cus_${c}', ${minute}, 'prod01', 'GET', 200, '/v1/old', 10, 0, 0, 0, 50000, 10, 5000, 5000, map(toInt16(round(log2(5000) * 50)), toInt64(10)))`,
      );
  await ch.command({
    query: `INSERT INTO ${TABLES.consumersMinuteBefore} (account_sid, bucket_sid, consumer_id, minute, environment_sid, method,
              status_code, endpoint, requests, errors, blocked, bytes, duration_sum, duration_count, duration_min,
              duration_max, duration_hist) VALUES ${old.join(', ')}`,
  });
}, 120_000);

afterAll(async () => {
  await ch?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('bounds of a consumer p95 (chDB)', () => {
  it('hold every consumer p95 between them, over 24 hours and over the whole span', async () => {
    for (const startDate of [new Date(NOW - 86_400_000), new Date(NOW - 3 * 86_400_000)]) {
      const range = resolveRange({ startDate: startDate.toISOString() }, NOW + 60_000);
      const { source, params } = consumerSource({ accountSid: ACCOUNT, bucketSid: BUCKET, range }, 30, {}, [
        ...BOUND_COLUMNS,
        'duration_hist',
      ]);
      const rows = await (
        await ch.query({
          query: `SELECT consumer_id AS cid, toInt64(sum(duration_count)) AS n, max(duration_max) AS mx,
                    ${P95_LOWER_BOUND} AS lb, ${MERGE.percentiles}[2] AS p95, ${P95_UPPER_BOUND} AS ub
                  FROM (${source}) GROUP BY consumer_id`,
          query_params: params,
          format: 'JSONEachRow',
        })
      ).json<{ cid: string; n: string; mx: number | null; lb: number; p95: number | null; ub: number }>();
      expect(rows.length).toBeGreaterThan(CONSUMERS / 2);
      let plain = 0;
      let belowMax = 0;
      for (const row of rows) {
        if (row.p95 === null) {
          expect(row.ub, row.cid).toBe(-1);
          continue;
        }
        expect(row.lb, `${row.cid} lower bound`).toBeLessThanOrEqual(row.p95);
        expect(row.p95, `${row.cid} upper bound`).toBeLessThanOrEqual(row.ub);
        const c = Number(row.cid.slice(4));
        // Under 21 calls the p95 is the slowest call and the upper bound that call itself (a
        // deleted slowest call is still the max, and the sums then bound the p95 below it).
        if (Number(row.n) <= 20 && !deletedFrom(c)) expect(row.ub, row.cid).toBe(row.mx);
        // With 21 calls or more, neither deleted from nor with old rows: the moments bound the
        // p95 below the slowest call, for the consumers of a few dozen calls too.
        if (Number(row.n) > 20 && !deletedFrom(c) && !withOldRows(c)) {
          plain++;
          if (row.ub < row.mx!) belowMax++;
        }
      }
      expect(plain).toBeGreaterThan(50);
      expect(belowMax / plain).toBeGreaterThan(0.5);
    }
  });
});
