/**
 * Query-time bench of the metrics endpoints over N stored records.
 *
 * Opens its OWN chDB data directory (never the service's), applies the service's ClickHouse
 * migrations (services/shared/clickhouse.ts), loads N synthetic rows into `requests` with
 * INSERT ... SELECT FROM numbers(N) — so the materialized views fill the aggregates exactly as in
 * production — then times the SQL the API runs (the builders exported by metrics-queries.ts):
 * median and p95 of `runs` calls each.
 *
 *   npx tsx test/bench/metrics-load.ts [rows=1000000] [--days=30] [--runs=50] [--dir=PATH] [--keep]
 *                                      [--insert-cost]
 *
 * With --dir pointing at a directory loaded before (--keep), loading is skipped. --insert-cost
 * also measures what the metrics views add to a processor-sized insert.
 *
 * Synthetic traffic: spread evenly over the last `days` days ending now; one account, 4 buckets
 * (50/25/15/10%), 2 environments (70/30%), 40 endpoint templates each with its own method,
 * 8 status codes (80% 200 ... 1% 503), long-tailed durations (log-normal body, median ~40 ms,
 * 1% slow outliers of seconds, 5% sub-millisecond).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  comparisonSql,
  errorsSql,
  performanceSql,
  responseTimeSql,
  seriesSql,
  summarySql,
  type Sql,
} from '../../services/api/metrics/metrics-queries.js';
import { resolveRange, scopeOf } from '../../services/api/metrics/metrics-range.js';
import { createClickHouse, migrateClickHouse } from '../../services/shared/clickhouse.js';
import { parseConfig } from '../../services/shared/config.js';
import { logger } from '../../services/shared/logger.js';
import { TABLES } from '../../services/shared/tables.js';

const args = process.argv.slice(2);
const flag = (name: string): string | undefined =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const ROWS = Number(args.find((a) => /^\d+$/.test(a)) ?? 1_000_000);
const DAYS = Number(flag('days') ?? 30);
const RUNS = Number(flag('runs') ?? 50);
const KEEP = args.includes('--keep');
const dir = flag('dir') ?? fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-metrics-bench-'));
const ACCOUNT = 'acc_bench000000000000000000000';

const cfg = parseConfig({
  ...process.env,
  DATA_DIR: dir,
  CLICKHOUSE_URL: '',
  RETENTION_DAYS: String(DAYS + 1),
});
const ch = createClickHouse(cfg.clickhouse);

async function scalar(query: string): Promise<number> {
  const rs = await ch.query({ query, format: 'JSONEachRow' });
  const [row] = await rs.json<{ v: number | string }>();
  return Number(row?.v ?? 0);
}

/** INSERT of `size` synthetic rows numbered from `off`, spread evenly over [startS, startS + spanS). */
function insertSql(table: string, off: number, size: number, startS: number, spanS: number): string {
  return `INSERT INTO ${table}
    (account_sid, bucket_sid, sid, environment_sid, created_at, received_at, method, host, path, endpoint,
     status_code, duration, request_size, response_size, blocked, record, kafka_partition, kafka_offset)
    SELECT '${ACCOUNT}',
      ['bkt_a', 'bkt_a', 'bkt_a', 'bkt_a', 'bkt_a', 'bkt_b', 'bkt_b', 'bkt_b', 'bkt_c', 'bkt_d'][h % 10 + 1],
      concat('req_', leftPad(toString(number), 27, '0')),
      if(intDiv(h, 10) % 10 < 7, 'prod01', 'stag01'),
      toDateTime64(${startS} + intDiv((number - ${off}) * ${spanS}, ${size}), 3, 'UTC') AS ts, ts,
      ['GET', 'GET', 'POST', 'PUT', 'GET', 'DELETE', 'GET', 'PATCH'][e % 8 + 1], 'api.example.com',
      concat('/v1/things', toString(e), '/', toString(number)), concat('/v1/things', toString(e), '/{id}'),
      multiIf(p < 80, 200, p < 86, 201, p < 89, 204, p < 92, 400, p < 94, 401, p < 97, 404, p < 99, 500, 503),
      round(multiIf(rand(1) % 100 < 5, randUniform(0.05, 1.0),
                    rand(2) % 100 < 1, exp(randNormal(log(3000), 0.8)),
                    exp(randNormal(log(40), 1.1))), 3),
      200 + h % 800, 500 + h % 5000, toUInt8(h % 500 = 0), '{}', 0, number
    FROM (SELECT number, cityHash64(number) AS h, intDiv(h, 1000) % 40 AS e, intDiv(h, 100000) % 100 AS p
          FROM numbers(${off}, ${size}))`;
}

async function load(): Promise<void> {
  const now = Math.floor(Date.now() / 1000);
  const span = DAYS * 86400;
  const chunk = 1_000_000;
  const t0 = performance.now();
  for (let off = 0; off < ROWS; off += chunk) {
    const size = Math.min(chunk, ROWS - off);
    // Each chunk covers its share of the span, so the whole load is spread evenly over it.
    const start = now - span + Math.floor((off * span) / ROWS);
    await ch.command({
      query: insertSql(TABLES.requests, off, size, start, Math.ceil((size * span) / ROWS)),
    });
  }
  const s = (performance.now() - t0) / 1000;
  console.log(`loaded ${ROWS} rows in ${s.toFixed(1)} s (${Math.round(ROWS / s)} rows/s)`);
}

/**
 * What the metrics views add to each processor insert: blocks of 20,000 records from the last
 * minute into `requests` with its views, and into a copy of `requests` without them.
 */
async function insertCost(): Promise<void> {
  await ch.command({ query: 'CREATE DATABASE IF NOT EXISTS bench_raw' });
  await ch.command({ query: `CREATE TABLE IF NOT EXISTS bench_raw.requests AS ${TABLES.requests}` });
  const block = 20_000;
  let off = 2_000_000_000;
  console.log(
    `\ninsert of ${block}-record blocks (the last minute), 10 blocks each: wall median, CPU median (ms)`,
  );
  for (const [label, table] of [
    ['requests without views', 'bench_raw.requests'],
    ['requests with the metrics views', TABLES.requests],
  ] as const) {
    const ms: number[] = [];
    const cpu: number[] = [];
    for (let i = 0; i < 10; i++) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await ch.command({ query: insertSql(table, off, block, Math.floor(Date.now() / 1000) - 60, 60) });
      ms.push(performance.now() - t0);
      const c = process.cpuUsage(c0);
      cpu.push((c.user + c.system) / 1000);
      off += block;
    }
    ms.sort((x, y) => x - y);
    cpu.sort((x, y) => x - y);
    console.log(
      `  ${label.padEnd(32)} ${median(ms).toFixed(1).padStart(7)}  cpu ${median(cpu).toFixed(1).padStart(7)}`,
    );
  }
}

const loadavg = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');
const median = (v: number[]) => v[Math.floor(v.length / 2)]!;
const p95 = (v: number[]) => v[Math.min(v.length - 1, Math.ceil(v.length * 0.95) - 1)]!;

/**
 * Wall time per call, and the process CPU time per call: chDB runs in this process, so the CPU
 * time is the query's own cost, which machine contention (other processes) does not inflate.
 */
async function time(sql: Sql): Promise<{ median: number; p95: number; cpu: number; rows: number }> {
  const ms: number[] = [];
  const cpu: number[] = [];
  let rows = 0;
  for (let i = 0; i < RUNS; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const rs = await ch.query({ ...sql, format: 'JSONEachRow' });
    rows = (await rs.json()).length;
    ms.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  ms.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  return { median: median(ms), p95: p95(ms), cpu: median(cpu), rows };
}

try {
  await migrateClickHouse(ch, cfg.clickhouse, logger('metrics-bench'));
  if ((await scalar(`SELECT count() AS v FROM ${TABLES.requests}`)) === 0) await load();
  // One merge round, as background merges would have done by the time a dashboard asks.
  for (const t of [TABLES.requestsMinute, TABLES.requestsRollup, TABLES.requestsKeyRollup])
    await ch.command({ query: `OPTIMIZE TABLE ${t}` }).catch(() => undefined);
  const raw = await scalar(`SELECT count() AS v FROM ${TABLES.requests}`);
  const agg = await scalar(`SELECT count() AS v FROM ${TABLES.requestsMinute}`);
  const rollup = await scalar(`SELECT count() AS v FROM ${TABLES.requestsRollup}`);
  console.log(`stored: ${raw} requests, ${agg} requests_minute rows, ${rollup} requests_rollup rows`);

  const now = Date.now();
  const ranges = [
    { label: 'last 24 h (default)', q: {} },
    { label: 'last 7 days', q: { startDate: new Date(now - 7 * 86400_000).toISOString() } },
    { label: 'last 30 days', q: { startDate: new Date(now - 30 * 86400_000).toISOString() } },
  ];
  const scenarios = [
    { label: 'whole account', bucketSid: undefined },
    { label: 'one bucket (bkt_b)', bucketSid: 'bkt_b' },
  ];
  console.log(`\nload average ${loadavg()} on ${os.cpus().length} cores`);
  console.log(`query time over ${raw} records, ${RUNS} calls each: wall median / p95, CPU median (ms)`);
  for (const r of ranges) {
    for (const sc of scenarios) {
      const range = resolveRange(r.q, now);
      const s = scopeOf(ACCOUNT, range, { bucketSid: sc.bucketSid, retentionDays: DAYS + 1, now });
      const length = range.end - range.start + 60_000;
      const prev = scopeOf(
        ACCOUNT,
        { start: range.start - length, end: range.start - 60_000 },
        {
          bucketSid: sc.bucketSid,
          retentionDays: DAYS + 1,
          now,
        },
      );
      const interval = r.label.startsWith('last 24') ? 'hour' : 'day';
      // One endpoint and its method (the endpoint page): template 3 of the set, whose method is PUT.
      const one = { ...s, endpoint: '/v1/things3/{id}', method: 'PUT' };
      const queries: [string, Sql][] = [
        ['summary', summarySql(s)],
        [`throughput (${interval})`, seriesSql(s, interval)],
        ...(r.label.startsWith('last 24')
          ? ([['throughput (minute)', seriesSql(s, 'minute')]] as [string, Sql][])
          : []),
        ['performance (endpoint)', performanceSql(s, 'endpoint', 100)],
        ['performance (method)', performanceSql(s, 'method', 100)],
        ['performance (status)', performanceSql(s, 'status', 100)],
        ['performance (environment)', performanceSql(s, 'environment', 100)],
        ['performance (route)', performanceSql(s, 'route', 1000)],
        ['one endpoint: summary', summarySql(one)],
        [`one endpoint: throughput (${interval})`, seriesSql(one, interval)],
        [`one endpoint: responseTime (${interval})`, responseTimeSql(one, interval)],
        ['errors', errorsSql(s)],
        ['shapeA/summary', comparisonSql(s, prev)],
        [`shapeA/responseTime (${interval})`, responseTimeSql(s, interval)],
      ];
      console.log(`\n${r.label}, ${sc.label}:`);
      for (const [label, sql] of queries) {
        const t = await time(sql);
        console.log(
          `  ${label.padEnd(32)} ${t.median.toFixed(1).padStart(7)} / ${t.p95.toFixed(1).padStart(7)}  cpu ${t.cpu.toFixed(1).padStart(6)}   (${t.rows} rows)`,
        );
      }
    }
  }
  if (args.includes('--insert-cost')) await insertCost();
  console.log(`\nload average ${loadavg()}`);
} finally {
  await ch.close();
  if (!KEEP) fs.rmSync(dir, { recursive: true, force: true });
  else console.log(`kept ${dir}`);
}
