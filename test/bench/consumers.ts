/**
 * API consumers (docs/consumers.md): what the consumer path costs the processor, and how fast the
 * consumers list, a consumer's page and the metrics narrowed to a consumer answer.
 *
 *   npx tsx test/bench/consumers.ts [rows=1000000] [--consumers=100000] [--days=30] [--runs=20]
 *                                   [--cpu-records=20000] [--dir=PATH] [--keep] [--only=cpu|query|load]
 *                                   [--chunk=1000000] [--load-minutes=N]
 *
 * 1. cpu: records/s through the processor's steps plus the row mapping (what every stored record
 *    costs), in process, no I/O, for records without a consumer in a bucket without rules (the
 *    baseline), records carrying their own consumer, and records identified by a header rule
 *    (keyed hash) and by a JWT claim. The difference to the baseline is the consumer path's CPU
 *    per record.
 * 2. query: opens its OWN chDB data directory (never the service's), applies the migrations, loads
 *    `rows` synthetic records with `consumers` distinct consumers (Zipf-like: a few busy, most
 *    rare) spread over the last `days` days into `requests` (INSERT … SELECT FROM numbers, so the
 *    materialized views fill consumers_minute and consumer_labels as in production), then times
 *    the consumers list, one consumer's page and a consumer-narrowed metrics summary over the last
 *    24 hours and the whole span: wall median / p95 and CPU median of `runs` calls.
 *    The names set through the API live in Postgres; the bench has none (its pool answers none).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import { ConsumersRepository } from '../../services/api/consumers/consumers.repository.js';
import { summarySql } from '../../services/api/metrics/metrics-queries.js';
import { resolveRange, scopeOf, type TimeRange } from '../../services/api/metrics/metrics-range.js';
import { compileProcessorRules, type BucketRules } from '../../services/processor/compiled-rules.js';
import { runSteps, type StoredRecord } from '../../services/processor/pipeline.js';
import { emptyRules } from '../../services/processor/rule-snapshot.js';
import { toRow } from '../../services/processor/row.mapper.js';
import { PROCESSOR_STEPS } from '../../services/processor/steps/index.js';
import {
  createClickHouse,
  migrateClickHouse,
  queryLimits,
  withQuerySettings,
} from '../../services/shared/clickhouse.js';
import { sealConsumerRollup } from '../../services/shared/consumer-seal.js';
import { consumerWindowMetrics } from '../../services/scheduler/threshold.query.js';
import { parseConfig } from '../../services/shared/config.js';
import { logger } from '../../services/shared/logger.js';
import { TABLES } from '../../services/shared/tables.js';

const args = process.argv.slice(2);
const flag = (name: string): string | undefined =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const ROWS = Number(args.find((a) => /^\d+$/.test(a)) ?? 1_000_000);
const CONSUMERS = Number(flag('consumers') ?? 100_000);
const DAYS = Number(flag('days') ?? 30);
const RUNS = Number(flag('runs') ?? 20);
const CPU_RECORDS = Number(flag('cpu-records') ?? 20_000);
const ONLY = flag('only');
/** Rows per INSERT of the query set's load. */
const CHUNK = Number(flag('chunk') ?? 1_000_000);
/** > 0: no chunk of the load starts after this many minutes (the set is then a uniform part of it). */
const LOAD_MINUTES = Number(flag('load-minutes') ?? 0);
const KEEP = args.includes('--keep');
const ACCOUNT = 'acc_bench000000000000000000000';
const BUCKET = 'bkt_a';

const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
const p95 = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(s.length * 0.95) - 1)]!;
};
const loadavg = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');

// ------------------------------------------------------------------------------------------ cpu

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

function record(
  i: number,
  extra: { headers?: Record<string, string>; consumer?: object } = {},
): StoredRecord {
  const path = `/users/${1000 + i}/orders`;
  return {
    sid: `req_bench${String(i).padStart(22, '0')}`,
    accountSid: ACCOUNT,
    bucketSid: BUCKET,
    environmentSid: 'prod01',
    contextSid: null,
    direction: 'in',
    createdAt: new Date(1_790_000_000_000 + i).toISOString(),
    receivedAt: new Date(1_790_000_000_000 + i).toISOString(),
    firewall: { blocked: false },
    request: {
      host: 'api.example.com',
      method: 'GET',
      path,
      port: 443,
      url: `https://api.example.com${path}?page=2`,
      queryString: { page: '2' },
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        'user-agent': 'bench/1.0',
        'x-request-id': `r-${i}`,
        ...extra.headers,
      },
      body: JSON.stringify({ items: [{ id: i, name: 'thing', tags: ['a', 'b'] }], note: 'x'.repeat(600) }),
      contentType: 'application/json',
      size: null,
    },
    response: {
      statusCode: i % 17 === 0 ? 500 : 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ok: true, id: i }),
      contentType: 'application/json',
      size: null,
    },
    timings: { duration: 10 + (i % 90) },
    tags: [],
    ...(extra.consumer ? { consumer: extra.consumer } : {}),
  };
}

function rulesWith(sources: unknown[]): BucketRules {
  const r = emptyRules(ACCOUNT, 'Bench');
  if (sources.length) r.identification.set(BUCKET, sources as never);
  return compileProcessorRules(r, undefined, Buffer.alloc(32, 7)).forBucket(BUCKET);
}

function cpuBench(): void {
  const withoutIdentify = PROCESSOR_STEPS.filter((s) => s.name !== 'identifyStep');
  const cases: {
    label: string;
    rules: BucketRules;
    make: (i: number) => StoredRecord;
    steps?: typeof PROCESSOR_STEPS;
  }[] = [
    { label: 'no consumer, no rules (baseline)', rules: rulesWith([]), make: (i) => record(i) },
    {
      label: 'same, without the identify step',
      rules: rulesWith([]),
      make: (i) => record(i),
      steps: withoutIdentify,
    },
    {
      label: 'own consumer on the record',
      rules: rulesWith([]),
      make: (i) => record(i, { consumer: { id: `cus_${i % 5000}`, name: 'Acme', group: 'pro' } }),
    },
    {
      label: 'header rule, keyed hash',
      rules: rulesWith([{ type: 'header', name: 'X-API-Key', hash: true }]),
      make: (i) => record(i, { headers: { 'x-api-key': `sk_live_${i % 5000}abcdefabcdef` } }),
    },
    {
      label: 'JWT claim rule with group',
      rules: rulesWith([{ type: 'jwtClaim', header: 'Authorization', claim: 'sub', groupClaim: 'org' }]),
      make: (i) =>
        record(i, {
          headers: {
            authorization: `Bearer ${b64({ alg: 'RS256' })}.${b64({ sub: `u${i % 5000}`, org: 'o1' })}.sig`,
          },
        }),
    },
  ];
  console.log(`\nprocessor CPU: steps + row mapping, ${CPU_RECORDS} records × 5 rounds (best round)`);
  console.log(`load average ${loadavg()} on ${os.cpus().length} cores`);
  let base = 0;
  for (const c of cases) {
    const records = Array.from({ length: CPU_RECORDS }, (_, i) => c.make(i));
    const ctx = { accountSid: ACCOUNT, bucketSid: BUCKET, rules: c.rules };
    let best = Infinity;
    for (let round = 0; round < 5; round++) {
      const c0 = process.cpuUsage();
      for (const r of records) {
        const res = runSteps(r, ctx, c.steps ?? PROCESSOR_STEPS);
        if (res.kind === 'ok') toRow(res.record, 0, 0);
      }
      const u = process.cpuUsage(c0);
      best = Math.min(best, (u.user + u.system) / CPU_RECORDS);
    }
    if (base === 0) base = best;
    console.log(
      `  ${c.label.padEnd(36)} ${best.toFixed(2).padStart(6)} µs/record  (${(best - base >= 0 ? '+' : '') + (best - base).toFixed(2)} µs)`,
    );
  }
}

// ---------------------------------------------------------------------------------------- query

async function queryBench(): Promise<void> {
  const dir = flag('dir') ?? fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-consumers-bench-'));
  const cfg = parseConfig({
    ...process.env,
    DATA_DIR: dir,
    CLICKHOUSE_URL: '',
    RETENTION_DAYS: String(DAYS + 1),
  });
  const ch = createClickHouse(cfg.clickhouse);
  try {
    await migrateClickHouse(ch, cfg.clickhouse, logger('consumers-bench'));
    const count = async (q: string) =>
      Number((await (await ch.query({ query: q, format: 'JSONEachRow' })).json<{ v: string }>())[0]?.v ?? 0);
    if ((await count(`SELECT count() AS v FROM ${TABLES.requests}`)) === 0) {
      const now = Math.floor(Date.now() / 1000);
      const span = DAYS * 86400;
      const chunks = Math.ceil(ROWS / CHUNK);
      const t0 = performance.now();
      for (let j = 0; j < chunks; j++) {
        if (LOAD_MINUTES > 0 && performance.now() - t0 > LOAD_MINUTES * 60_000) {
          console.log(`load stopped after ${j} of ${chunks} chunks (--load-minutes=${LOAD_MINUTES})`);
          break;
        }
        // Chunk j holds the numbers j, j + chunks, j + 2 chunks, … below ROWS: each chunk spreads
        // over the whole span, in time order, so a load stopped after some chunks is a uniform
        // sample of the full set (the last 24 hours hold their share of it).
        // Consumer k = floor(C * u^3) for u uniform in [0, 1): low ids busy, most ids rare; every
        // 1000th consumer carries a name and a group.
        await ch.command({
          query: `INSERT INTO ${TABLES.requests}
            (account_sid, bucket_sid, sid, environment_sid, created_at, received_at, method, host, path, endpoint,
             status_code, duration, request_size, response_size, blocked, record, kafka_partition, kafka_offset,
             consumer_id, consumer_name, consumer_group)
            SELECT '${ACCOUNT}', '${BUCKET}', concat('req_', leftPad(toString(number), 27, '0')),
              if(h % 10 < 7, 'prod01', 'stag01'),
              toDateTime64(${now - span} + intDiv(number * ${span}, ${ROWS}), 3, 'UTC') AS ts, ts,
              ['GET', 'POST', 'GET', 'PUT'][h % 4 + 1], 'api.example.com',
              concat('/v1/things', toString(e), '/', toString(number)), concat('/v1/things', toString(e), '/{id}'),
              if(intDiv(h, 7) % 100 < 95, 200, 500),
              round(exp(randNormal(log(40), 1.1)), 3), 300, 900, 0, '{}', 0, number,
              concat('cus_', toString(k)), if(k % 1000 = 0, concat('Customer ', toString(k)), ''),
              if(k % 1000 = 0, ['free', 'pro', 'enterprise'][k % 3 + 1], '')
            FROM (SELECT ${j} + i * ${chunks} AS number, cityHash64(number) AS h, intDiv(h, 1000) % 40 AS e,
                         toUInt64(floor(${CONSUMERS} * pow((h % 1000003) / 1000003, 3))) AS k
                  FROM (SELECT number AS i FROM numbers(${Math.ceil(ROWS / chunks)}))
                  WHERE ${j} + i * ${chunks} < ${ROWS})`,
          // as the processor inserts (requests.writer.ts)
          clickhouse_settings: { optimize_on_insert: 0 },
        });
        console.log(
          `chunk ${j + 1} of ${chunks} loaded, ${((performance.now() - t0) / 1000).toFixed(0)} s, load average ${loadavg()}`,
        );
      }
      const s = (performance.now() - t0) / 1000;
      console.log(`load done in ${s.toFixed(1)} s`);
    }
    for (const t of [
      TABLES.consumersMinuteByHour,
      TABLES.consumersMinuteBefore,
      TABLES.consumerLabels,
      TABLES.consumersRollup,
    ])
      await ch.command({ query: `OPTIMIZE TABLE ${t}` }).catch(() => undefined);
    // Background merges started by opening the directory (the load leaves many parts of
    // `requests`) would share the cores with the timed calls: wait for them, at most 10 minutes.
    for (let waited = 0; waited < 600; waited += 5) {
      const merging = await count(`SELECT count() AS v FROM system.merges`);
      if (merging === 0) break;
      if (waited % 30 === 0) console.log(`waiting for ${merging} background merges`);
      await new Promise((r) => setTimeout(r, 5000));
    }
    // The scheduler's seal of consumers_rollup's hour, day and week blocks (consumer-seal.ts), as it
    // runs at a start with no seal recorded (every day within retention checked), with the
    // scheduler's query limits.
    const iso = (t: number | null) => (t === null ? 'none' : new Date(t * 1000).toISOString());
    const s0 = performance.now();
    const sealed = await sealConsumerRollup(withQuerySettings(ch, queryLimits(cfg.limits).scheduler), {
      retentionDays: DAYS + 1,
    });
    console.log(
      `seal: ${sealed.hours} hours, ${sealed.days} days and ${sealed.weeks} weeks checked in ${((performance.now() - s0) / 1000).toFixed(1)} s, days complete up to ${iso(sealed.sealedThrough)}, hours up to ${iso(sealed.hoursSealedThrough)}`,
    );
    const raw = await count(`SELECT count() AS v FROM ${TABLES.requests}`);
    const distinct = await count(`SELECT uniqExact(consumer_id) AS v FROM ${TABLES.consumerLabels}`);
    const minuteRows = await count(`SELECT count() AS v FROM ${TABLES.consumersMinute}`);
    console.log(`stored: ${raw} requests, ${distinct} distinct consumers, ${minuteRows} minute rows`);
    if (ONLY === 'load') return;

    const noOverrides = { query: async () => ({ rows: [] }) } as unknown as pg.Pool;
    const repo = new ConsumersRepository(ch, noOverrides, DAYS + 1);
    const now = Date.now();
    const ranges: { label: string; range: TimeRange }[] = [
      { label: '24 h', range: resolveRange({}, now) },
      {
        label: `${DAYS} days`,
        range: resolveRange({ startDate: new Date(now - DAYS * 86400_000).toISOString() }, now),
      },
    ];
    // Each call runs once untimed first (the caches a dashboard that is in use keeps warm: marks,
    // uncompressed blocks, the page cache), then RUNS times timed; the first call's time is
    // printed beside them.
    const time = async (fn: () => Promise<unknown>) => {
      const ms: number[] = [];
      const cpu: number[] = [];
      const f0 = performance.now();
      await fn();
      const first = performance.now() - f0;
      for (let i = 0; i < RUNS; i++) {
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        await fn();
        ms.push(performance.now() - t0);
        const c = process.cpuUsage(c0);
        cpu.push((c.user + c.system) / 1000);
      }
      return { first, median: median(ms), p95: p95(ms), cpu: median(cpu) };
    };
    /** The issue's targets for the list and a consumer's page: p95 ≤ 200 ms over 24 h, ≤ 1 s over the span. */
    const target = (label: string, name: string) =>
      name.startsWith('metrics') ? undefined : label === '24 h' ? 200 : 1000;
    console.log(`\nload average ${loadavg()} on ${os.cpus().length} cores`);
    console.log(
      `query time, ${RUNS} calls each after a first untimed one: wall median / p95, CPU median, first call (ms), p95 / target`,
    );
    for (const { label, range } of ranges) {
      const scope = { accountSid: ACCOUNT, bucketSid: BUCKET, range };
      const rows: [string, () => Promise<unknown>][] = [
        [
          'consumers list (requests)',
          () => repo.list(scope, { sort: 'requests', order: 'desc', page: 1, limit: 25 }),
        ],
        ['consumers list (p95)', () => repo.list(scope, { sort: 'p95', order: 'desc', page: 1, limit: 25 })],
        [
          'consumers list (q=cus_12)',
          () => repo.list(scope, { q: 'cus_12', sort: 'requests', order: 'desc', page: 1, limit: 25 }),
        ],
        ['busy consumer page (cus_0)', () => repo.get(scope, 'cus_0')],
        ['rare consumer page', () => repo.get(scope, `cus_${CONSUMERS - 7}`)],
        [
          'metrics summary consumer=cus_0',
          async () => {
            const s = scopeOf(ACCOUNT, range, {
              bucketSid: BUCKET,
              consumer: 'cus_0',
              retentionDays: DAYS + 1,
              now,
            });
            await (await ch.query({ ...summarySql(s), format: 'JSONEachRow' })).json();
          },
        ],
      ];
      for (const [name, fn] of rows) {
        const t = await time(fn);
        const goal = target(label, name);
        console.log(
          `  ${label.padEnd(8)} ${name.padEnd(32)} ${t.median.toFixed(1).padStart(8)} ${t.p95.toFixed(1).padStart(8)}   cpu ${t.cpu.toFixed(1).padStart(8)}   first ${t.first.toFixed(0).padStart(6)}${goal ? `   ${(t.p95 / goal).toFixed(2)} of ${goal} ms` : ''}`,
        );
      }
    }
    // A per-consumer threshold's evaluation (threshold.query.ts): every consumer's last 10 minutes,
    // at the set's last minute (the scheduler asks this every minute per workflow).
    const last = await count(
      `SELECT toUInt32(max(created_at)) AS v FROM ${TABLES.requests} WHERE account_sid = '${ACCOUNT}' AND bucket_sid = '${BUCKET}'`,
    );
    const t = await time(() =>
      consumerWindowMetrics(
        ch,
        { accountSid: ACCOUNT, bucketSid: BUCKET, environmentSid: '*' },
        600,
        new Date(last * 1000),
      ),
    );
    console.log(
      `  10 min   per-consumer threshold window        ${t.median.toFixed(1).padStart(8)} ${t.p95.toFixed(1).padStart(8)}   cpu ${t.cpu.toFixed(1).padStart(8)}   first ${t.first.toFixed(0).padStart(6)}`,
    );
  } finally {
    await ch.close();
    if (!KEEP && !flag('dir')) fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (ONLY !== 'query' && ONLY !== 'load') cpuBench();
if (ONLY !== 'cpu') await queryBench();
