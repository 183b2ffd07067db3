/**
 * SLOs (docs/slos.md) over a large stored set, in process: the status of 100 SLOs and the
 * once-a-minute burn-rate evaluation of the same 100.
 *
 *   npx tsx test/bench/slo-status.ts [rows=1000000] [--days=1] [--rounds=5] [--dir=PATH] [--keep]
 *
 * Opens its OWN chDB data directory (never the service's), applies the migrations and, when the
 * directory holds no request yet, loads `rows` records with the query sets' INSERT (large-set.ts:
 * 50 endpoints, 3 environments, ~4% errors, log-normal durations, over the last `days` days) so
 * the materialized views fill the aggregates as for the processor's inserts. `--dir` with `--keep`
 * keeps a loaded set for the next run (a before/after pair reads the same set).
 * 1. status: `sloStatus` of each of 100 SLOs (half availability, half latency at 100 ms; half over
 *    the bucket, half over one endpoint and method; every third in one environment; 7- or 30-day
 *    windows, as the bench's query phase creates them, test/bench/slo-impact.ts), 5 unmeasured
 *    passes then `rounds` measured: wall median / p95 per SLO against the 300 ms target.
 * 2. evaluation: `rounds` passes of what the scheduler runs each minute for slo_burn workflows
 *    with the default alerts on the 100 SLOs (services/scheduler/slo-burn.evaluator.ts: one
 *    `sloBurnCounts` for the bucket over the windows 5m, 1h, 30m, 6h, 3d); the process CPU (Node
 *    and chDB's threads) per pass over 60 s is the share of a core the evaluation costs (target
 *    under 5%).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createClickHouse, migrateClickHouse } from '../../services/shared/clickhouse.js';
import { parseConfig } from '../../services/shared/config.js';
import { logger } from '../../services/shared/logger.js';
import { TABLES } from '../../services/shared/tables.js';
import { sloBurnCounts } from '../../services/slo/slo.query.js';
import { sloStatus } from '../../services/slo/slo.status.js';
import type { Slo } from '../../services/slo/slos.repository.js';
import { largeSetSql } from './large-set.js';
import { ENDPOINTS } from './records.js';

const args = process.argv.slice(2);
const flag = (name: string): string | undefined =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const ROWS = Number(args.find((a) => /^\d+$/.test(a)) ?? 1_000_000);
const DAYS = Number(flag('days') ?? 1);
const ROUNDS = Number(flag('rounds') ?? 5);
const KEEP = args.includes('--keep');
const ACCOUNT = 'acc_bench000000000000000000000';
const BUCKET = 'bkt_slo';
const ENVIRONMENTS = ['prod01', 'stag01', 'dev001'];
/** The windows of the default burn-rate alerts (slo-math.ts DEFAULT_BURN_ALERTS), in seconds. */
const EVALUATION_WINDOWS = [3600, 300, 21_600, 1800, 259_200, 21_600];

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};
const cpuMs = (c: NodeJS.CpuUsage) => (c.user + c.system) / 1000;
const loadavg = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');

const slos: Slo[] = Array.from({ length: 100 }, (_, i) => {
  const e = ENDPOINTS[i % ENDPOINTS.length]!;
  return {
    sid: `slo_bench${String(i).padStart(3, '0')}`,
    accountSid: ACCOUNT,
    name: `bench slo ${i}`,
    bucketSid: BUCKET,
    environmentSid: i % 3 === 0 ? 'prod01' : null,
    endpoint: i % 4 < 2 ? e.endpoint : null,
    method: i % 4 < 2 ? e.method : null,
    sli: i % 2 === 0 ? { kind: 'availability' } : { kind: 'latency', thresholdMs: 100 },
    objective: 99.5,
    windowDays: i % 5 === 0 ? 7 : 30,
    createdAt: new Date().toISOString(),
    updatedAt: null,
  };
});

const dir = flag('dir') ?? fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-slo-bench-'));
const cfg = parseConfig({ ...process.env, DATA_DIR: dir, CLICKHOUSE_URL: '', RETENTION_DAYS: '31' });
const ch = createClickHouse(cfg.clickhouse);
try {
  await migrateClickHouse(ch, cfg.clickhouse, logger('slo-bench'));
  const count = async () =>
    Number(
      (
        await (
          await ch.query({ query: `SELECT count() AS n FROM ${TABLES.requests}`, format: 'JSONEachRow' })
        ).json<{ n: string }>()
      )[0]?.n ?? 0,
    );
  if ((await count()) === 0) {
    const t0 = performance.now();
    for (let from = 0; from < ROWS; from += 1_000_000) {
      const rows = Math.min(1_000_000, ROWS - from);
      await ch.command({
        query: largeSetSql(ENVIRONMENTS),
        query_params: { a: ACCOUNT, b: BUCKET, now: Date.now(), span: DAYS * 86_400_000, from, rows },
        clickhouse_settings: { max_insert_threads: '2' },
      });
    }
    console.log(
      `loaded ${ROWS} rows over ${DAYS} day(s) in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
    );
  }
  console.log(`stored: ${await count()} requests; load average ${loadavg()} on ${os.cpus().length} cores`);

  for (let i = 0; i < 5; i++) await sloStatus(ch, slos[i]!);
  const ms: number[] = [];
  const c0 = process.cpuUsage();
  for (let r = 0; r < ROUNDS; r++)
    for (const slo of slos) {
      const t = performance.now();
      await sloStatus(ch, slo);
      ms.push(performance.now() - t);
    }
  const statusCpu = cpuMs(process.cpuUsage(c0)) / (ROUNDS * slos.length);
  const p95 = quantile(ms, 0.95);
  console.log(
    `status of 100 SLOs x ${ROUNDS}: median ${quantile(ms, 0.5).toFixed(1)} ms, p95 ${p95.toFixed(1)} ms (${(p95 / 300).toFixed(2)} of 300 ms), CPU ${statusCpu.toFixed(1)} ms per status`,
  );

  const windows = [...new Set(EVALUATION_WINDOWS)];
  const passes: number[] = [];
  const walls: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const e0 = process.cpuUsage();
    const w0 = performance.now();
    await sloBurnCounts(ch, slos, windows, new Date());
    walls.push(performance.now() - w0);
    passes.push(cpuMs(process.cpuUsage(e0)));
  }
  const cpu = quantile(passes, 0.5);
  console.log(
    `evaluation of 100 SLOs x ${ROUNDS}: CPU per pass median ${cpu.toFixed(0)} ms (wall ${quantile(walls, 0.5).toFixed(0)} ms) = ${((100 * cpu) / 60_000).toFixed(2)}% of a core once a minute (${((100 * cpu) / 60_000 / 5).toFixed(2)} of 5%)`,
  );
  console.log(`load average ${loadavg()}`);
} finally {
  await ch.close();
  if (!KEEP && !flag('dir')) fs.rmSync(dir, { recursive: true, force: true });
}
