/**
 * Metrics SQL against a kept copy of the bench's query set, without the service: load the set once
 * (the same `INSERT … SELECT` as large-set.ts, into a chDB directory of its own), then time the
 * SQL the API runs (the builders of services/api/metrics/metrics-queries.ts) in seconds instead of the
 * several minutes of `npm run bench -- --only query`.
 *
 *   npx tsx test/bench/metrics-set.ts load --dir=.cache/mq-1m --rows=1000000 [--from=0] [--days=1] [--chunks=1]
 *   npx tsx test/bench/metrics-set.ts time --dir=.cache/mq-1m [--runs=50] [--only=summary,performance]
 *                                          [--ab=DIR/services/api/metrics/metrics.repository.js]
 *   npx tsx test/bench/metrics-set.ts compare --dir=.cache/mq-1m --ab=DIR/services/api/metrics/metrics.repository.js
 *   npx tsx test/bench/metrics-set.ts dump --dir=.cache/mq-1m --now=MS [--out=FILE] [--against=FILE --rel=0.0046]
 *   npx tsx test/bench/metrics-set.ts sql --dir=.cache/mq-1m [--runs=20] < query.sql
 *   npx tsx test/bench/metrics-set.ts state --dir=.cache/mq-1m      (parts and rows of the aggregates)
 *   npx tsx test/bench/metrics-set.ts migrate --dir=.cache/mq-1m    (apply new migrations, timed: a set
 *                                          loaded by an older build is upgraded as an install would be)
 *   npx tsx test/bench/metrics-set.ts optimize --dir=.cache/mq-1m   (merge each aggregate table into one
 *                                          part per partition, as background merges eventually would)
 *
 * `--server` (any command): the same directory opened by a ClickHouse server process instead of
 * chDB in this process (infra/local/clickhouse-server.launcher.ts, the same engine; CLICKHOUSE_MODE
 * =server), queried over HTTP. `time` then reports the server's CPU per call beside this process's,
 * so both modes are compared on the same parts.
 *
 * `--ab` names another build of the repository (e.g. the committed one, compiled with
 * `npx tsc -p tsconfig.build.json --outDir DIR`): `time` runs both call by call, interleaved;
 * `compare` asks both for every endpoint over several ranges and scopes and reports every answer
 * that differs (numbers equal, or within 1e-9 relative for float sums added in another order; an
 * average whose exact value is a half at its 0.001 rounding may round either way, as it does from
 * call to call with either build, and is counted apart).
 *
 * A chDB directory is opened by one process at a time: never point it at a running service's.
 * `time` reports wall median / p95 and the process CPU per call (chDB runs in the process, so CPU
 * is the query's own cost whatever else runs on the machine). Like the bench it scopes every
 * query to the set's bucket and the default range (the last 24 hours); a set loaded hours ago
 * has part of its day outside that range, which is fine for comparing SQL.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import type { Sql } from '../../services/api/metrics/metrics-queries.js';
import { resolveRange, scopeOf } from '../../services/api/metrics/metrics-range.js';
import { MetricsRepository } from '../../services/api/metrics/metrics.repository.js';
import { createClickHouse, migrateClickHouse } from '../../services/shared/clickhouse.js';
import { largeSetSql } from './large-set.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';
import type { Config } from '../../services/shared/config.js';
import { startClickHouseServer } from '../../infra/local/clickhouse-server.launcher.js';
import { freePort, ROOT } from './bench-stack.js';

const [cmd = 'time', ...rest] = process.argv.slice(2);
const flag = (name: string, def?: string): string | undefined =>
  rest.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? def;
const DIR = flag('dir');
if (!DIR) throw new Error('--dir=PATH is required');
const ACCOUNT = 'acc_metricsset0000000000000000';
const BUCKET = 'bkt_metricsset0000000000000000';
const ENVIRONMENTS = ['prod01', 'stag01', 'dev001'];

const log = pino({ level: 'warn' });
// chDB keeps the migrations' unqualified tables in `default` (services/shared/clickhouse.ts), so a
// server opening a chDB directory finds them there.
const server = rest.includes('--server')
  ? await startClickHouseServer({
      cacheDir: path.join(ROOT, '.cache'),
      dataDir: path.resolve(DIR),
      httpPort: await freePort(),
      tcpPort: await freePort(),
      log,
    })
  : undefined;
const chCfg: Config['clickhouse'] = server
  ? { ...embeddedClickHouse(DIR), mode: 'server', url: server.url, database: 'default' }
  : embeddedClickHouse(DIR);
const ch = createClickHouse(chCfg);
/**
 * CPU ms of the server process (0 without --server): utime + stime of /proc/<pid>/stat, in clock
 * ticks of 10 ms (USER_HZ 100), so one call's figure is coarse and `time` prints the mean too.
 */
const serverCpuMs = (): number => {
  if (!server) return 0;
  const f = fs.readFileSync(`/proc/${server.pid}/stat`, 'utf8');
  const [utime, stime] = f
    .slice(f.lastIndexOf(')') + 2)
    .split(' ')
    .slice(11, 13)
    .map(Number);
  return ((utime! + stime!) * 1000) / 100;
};

const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const q = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
};
const fmt = (x: number): string => x.toFixed(1).padStart(7);
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

async function rows<T>(sql: Sql | string): Promise<T[]> {
  const s = typeof sql === 'string' ? { query: sql, query_params: {} } : sql;
  return (await ch.query({ ...s, format: 'JSONEachRow' })).json<T>();
}

async function load(): Promise<void> {
  await migrateClickHouse(ch, chCfg, log);
  const rowsN = Number(flag('rows', '1000000'));
  // --chunks=N: N inserts in time order, each of its own slice of the span, as the processor's
  // blocks arrive (one statement otherwise).
  const chunks = Number(flag('chunks', '1'));
  const span = Number(flag('days', '1')) * 86_400_000;
  const from = Number(flag('from', '0'));
  const now = Date.now();
  const t0 = performance.now();
  for (let i = 0; i < chunks; i++) {
    const rows = Math.floor((rowsN * (i + 1)) / chunks) - Math.floor((rowsN * i) / chunks);
    await ch.command({
      query: largeSetSql(ENVIRONMENTS),
      query_params: {
        a: ACCOUNT,
        b: BUCKET,
        now: now - span + Math.round((span * (i + 1)) / chunks),
        span: Math.round(span / chunks),
        from: from + Math.floor((rowsN * i) / chunks),
        rows,
      },
      clickhouse_settings: { max_insert_threads: '2' },
    });
  }
  const s = (performance.now() - t0) / 1000;
  console.log(
    `loaded ${rowsN} rows in ${chunks} insert(s) in ${s.toFixed(0)} s (${Math.round(rowsN / s)} rows/s)`,
  );
  await state();
}

async function migrate(): Promise<void> {
  const t0 = performance.now();
  const c0 = cpuMs();
  const n = await migrateClickHouse(ch, chCfg, log);
  console.log(
    `${n} migration(s) applied in ${((performance.now() - t0) / 1000).toFixed(1)} s (CPU ${((cpuMs() - c0) / 1000).toFixed(1)} s)`,
  );
  await state();
}

async function optimize(): Promise<void> {
  for (const table of ['requests_minute', 'requests_rollup']) {
    const t0 = performance.now();
    await ch.command({ query: `OPTIMIZE TABLE ${table} FINAL` });
    console.log(`${table}: OPTIMIZE FINAL in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  await state();
}

async function state(): Promise<void> {
  console.table(
    await rows(`SELECT table, count() AS parts, sum(rows) AS rows, formatReadableSize(sum(bytes_on_disk)) AS size
      FROM system.parts WHERE active AND database = currentDatabase() GROUP BY table ORDER BY table`),
  );
}

async function time(): Promise<void> {
  const runs = Number(flag('runs', '50'));
  const only = flag('only')?.split(',');
  const now = Number(flag('now', String(Date.now())));
  const range = resolveRange({}, now);
  const query = { accountSid: ACCOUNT, bucketSid: BUCKET, range };
  // No Postgres here: throughput's event markers are answered empty.
  const pool = { query: () => Promise.resolve({ rows: [] }) } as unknown as ConstructorParameters<
    typeof MetricsRepository
  >[1];
  // --ab=PATH: the same calls through another build of the repository (e.g. the one before a
  // change, compiled with `npx tsc -p tsconfig.build.json --outDir DIR`), interleaved call by call.
  const repos: [string, MetricsRepository][] = [['', new MetricsRepository(ch, pool, 30)]];
  const ab = flag('ab');
  if (ab) {
    const mod = (await import(path.resolve(ab))) as { MetricsRepository: typeof MetricsRepository };
    repos.push([' (ab)', new mod.MetricsRepository(ch, pool, 30)]);
  }
  const calls: [string, (r: MetricsRepository) => Promise<unknown>][] = [
    ['summary', (r) => r.summary(query)],
    ['throughput', (r) => r.throughput(query, 'hour')],
    ['performance', (r) => r.performance(query, 'endpoint', 100)],
    ['errors', (r) => r.errors(query, undefined, 100)],
    ['performance method', (r) => r.performance(query, 'method', 100)],
    ['performance status', (r) => r.performance(query, 'status', 100)],
    ['performance environment', (r) => r.performance(query, 'environment', 100)],
    ['shapeA summary', (r) => r.comparisonSummary(query)],
    ['shapeA responseTime', (r) => r.responseTimePeriods(query, 'hour')],
  ];
  const cases: [string, () => Promise<unknown>][] = [];
  for (const [label, call] of calls) {
    if (only && !only.includes(label)) continue;
    for (const [suffix, repo] of repos) cases.push([label + suffix, () => call(repo)]);
  }
  cases.push(['SELECT 1', () => rows('SELECT 1 AS x')]);
  const wall = new Map<string, number[]>();
  const cpu = new Map<string, number[]>();
  const scpu = new Map<string, number[]>();
  for (const [, fn] of cases) for (let i = 0; i < 2; i++) await fn();
  for (let i = 0; i < runs; i++) {
    for (const [label, fn] of cases) {
      const c = cpuMs();
      const sc = serverCpuMs();
      const t = performance.now();
      await fn();
      (wall.get(label) ?? wall.set(label, []).get(label)!).push(performance.now() - t);
      (cpu.get(label) ?? cpu.set(label, []).get(label)!).push(cpuMs() - c);
      (scpu.get(label) ?? scpu.set(label, []).get(label)!).push(serverCpuMs() - sc);
    }
  }
  console.log(
    `${runs} calls each, interleaved; load average ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
  for (const [label] of cases) {
    const w = wall.get(label)!;
    console.log(
      `${label.padEnd(30)} wall ${fmt(q(w, 0.5))} /${fmt(q(w, 0.95))}   cpu ${fmt(q(cpu.get(label)!, 0.5))}` +
        (server
          ? `   server cpu ${fmt(q(scpu.get(label)!, 0.5))} (mean ${fmt(mean(scpu.get(label)!))})`
          : ''),
    );
  }
}

const stubPool = { query: () => Promise.resolve({ rows: [] }) } as unknown as ConstructorParameters<
  typeof MetricsRepository
>[1];

/** Every endpoint over several ranges and scopes: [label, call] pairs (compare, dump). */
function answerCalls(now: number): [string, (m: MetricsRepository) => Promise<unknown>][] {
  const hour = Math.floor(now / 3600_000) * 3600_000;
  const iso = (ms: number) => new Date(ms).toISOString();
  const ranges = [
    {},
    { startDate: iso(now - 3 * 3600_000 - 7 * 60_000) },
    { startDate: iso(now - 26 * 3600_000 + 13 * 60_000), endDate: iso(now - 2 * 3600_000 - 3 * 60_000) },
    { startDate: iso(now - 5 * 60_000) },
    { startDate: iso(now - 7 * 86400_000) },
    { startDate: iso(hour - 5 * 3600_000), endDate: iso(hour - 3600_000 - 1) },
  ];
  const scopes = [
    { accountSid: ACCOUNT, bucketSid: BUCKET },
    { accountSid: ACCOUNT },
    { accountSid: ACCOUNT, bucketSid: BUCKET, environmentSid: ENVIRONMENTS[1] },
    { accountSid: ACCOUNT, environmentSid: 'nope00' },
  ];
  const out: [string, (m: MetricsRepository) => Promise<unknown>][] = [];
  for (const r of ranges) {
    for (const sc of scopes) {
      const query = { ...sc, range: resolveRange(r, now) };
      const calls: [string, (m: MetricsRepository) => Promise<unknown>][] = [
        ['summary', (m) => m.summary(query)],
        ['throughput hour', (m) => m.throughput(query, 'hour')],
        ['throughput day', (m) => m.throughput(query, 'day')],
        ['performance endpoint', (m) => m.performance(query, 'endpoint', 100)],
        ['performance method', (m) => m.performance(query, 'method', 3)],
        ['performance status', (m) => m.performance(query, 'status', 100)],
        ['performance environment', (m) => m.performance(query, 'environment', 100)],
        ['errors', (m) => m.errors(query, undefined, 100)],
        ['errors 404', (m) => m.errors(query, 404, 5)],
        ['shapeA summary', (m) => m.comparisonSummary(query)],
        ['shapeA throughput', (m) => m.throughputPeriods(query, 'hour', 'rps')],
        ['shapeA responseTime', (m) => m.responseTimePeriods(query, 'hour')],
      ];
      if (r !== ranges[4]) calls.push(['throughput minute', (m) => m.throughput(query, 'minute')]);
      for (const [name, call] of calls)
        out.push([`${name} ${JSON.stringify(r)} ${JSON.stringify(sc)}`, call]);
    }
  }
  return out;
}

/**
 * `rel`: percentiles (fields ending in `ResponseTime` other than the average, and Shape A's
 * percentile values) may differ by this relative amount, e.g. 0.0046 between a set aggregated on
 * the 347-step grid and the same set on the 100-step grid (0.1% + 0.35% rounding).
 */
function differ(rel = 0): { same: (x: unknown, y: unknown, where: string) => void; report: () => number } {
  let diffs = 0;
  let flips = 0;
  let worst = 0;
  const isPct = (where: string) =>
    /(p50|p95|p99)ResponseTime$/.test(where) ||
    /percentiles\.\d+\.(value|maximum|minimum|median)$/.test(where);
  const same = (x: unknown, y: unknown, where: string): void => {
    if (typeof x === 'number' && typeof y === 'number') {
      if (x === y || Math.abs(x - y) <= 1e-9 * Math.max(Math.abs(x), Math.abs(y))) return;
      if (rel > 0 && isPct(where)) {
        // 0.0005: both sides are rounded to 0.001 ms
        const e = (Math.abs(x - y) - 0.0005) / Math.max(Math.abs(x), Math.abs(y));
        worst = Math.max(worst, e);
        if (e <= rel) return;
      }
      // An average rounded to 0.001 whose exact value is a half: float sums added in another order
      // (ClickHouse's own threads do that from call to call, with either build) round either way.
      if (/(average|ResponseTime)$/.test(where) && Math.abs(x - y) < 0.0011) {
        flips++;
        return;
      }
    } else if (x && y && typeof x === 'object' && typeof y === 'object') {
      const keys = new Set([...Object.keys(x), ...Object.keys(y)]);
      for (const k of keys)
        same((x as Record<string, unknown>)[k], (y as Record<string, unknown>)[k], `${where}.${k}`);
      return;
    } else if (x === y) return;
    diffs++;
    console.log(`differs ${where}: ${JSON.stringify(x)} vs ${JSON.stringify(y)}`);
  };
  const report = () => {
    console.log(
      `${diffs} differ (${flips} averages rounded the other way` +
        (rel > 0 ? `; worst percentile difference ${(100 * worst).toFixed(3)}%)` : ')'),
    );
    return diffs;
  };
  return { same, report };
}

/** Every endpoint, several ranges and scopes: this repository's answers against `--ab`'s. */
async function compare(): Promise<void> {
  const ab = flag('ab');
  if (!ab) throw new Error('compare needs --ab=PATH');
  const mod = (await import(path.resolve(ab))) as { MetricsRepository: typeof MetricsRepository };
  const a = new MetricsRepository(ch, stubPool, 30);
  const b = new mod.MetricsRepository(ch, stubPool, 30);
  const calls = answerCalls(Date.now());
  const d = differ();
  for (const [where, call] of calls) d.same(await call(a), await call(b), where);
  console.log(`${calls.length} answers compared`);
  if (d.report() > 0) process.exitCode = 1;
}

/**
 * The same answers written to a file (`--out`), by this build or `--ab`'s, at a fixed `--now`
 * (epoch ms): two sets in two directories (e.g. before and after a migration that rebuilds the
 * aggregates) compared with `dump … --against=FILE [--rel=0.0046]`.
 */
async function dump(): Promise<void> {
  const ab = flag('ab');
  const mod = ab
    ? ((await import(path.resolve(ab))) as { MetricsRepository: typeof MetricsRepository })
    : { MetricsRepository };
  const repo = new mod.MetricsRepository(ch, stubPool, 30);
  const now = Number(flag('now', String(Date.now())));
  const answers: Record<string, unknown> = {};
  for (const [where, call] of answerCalls(now)) answers[where] = await call(repo);
  const out = flag('out');
  if (out) fs.writeFileSync(out, JSON.stringify(answers));
  const against = flag('against');
  if (against) {
    const other = JSON.parse(fs.readFileSync(against, 'utf8')) as Record<string, unknown>;
    const d = differ(Number(flag('rel', '0')));
    for (const [where, x] of Object.entries(answers)) d.same(x, other[where], where);
    console.log(`${Object.keys(answers).length} answers compared with ${against}`);
    if (d.report() > 0) process.exitCode = 1;
  }
}

async function sql(): Promise<void> {
  const text = fs.readFileSync(0, 'utf8');
  const runs = Number(flag('runs', '20'));
  const now = Number(flag('now', String(Date.now())));
  const scope = scopeOf(ACCOUNT, resolveRange({}, now), { bucketSid: BUCKET, retentionDays: 30, now });
  // Statements separated by a line holding `---`; {a} {b} {from} {to} are bound. The statements are
  // run round-robin (one call of each per round), so a change of machine load hits all alike.
  const stmts: Sql[] = [];
  for (const stmt of text
    .split(/^---$/m)
    .map((x) => x.trim())
    .filter(Boolean)) {
    if (/^(SYSTEM|OPTIMIZE|CREATE|INSERT|ALTER|DROP)\b/.test(stmt)) {
      await ch.command({ query: stmt });
      continue;
    }
    const s: Sql = { query: stmt, query_params: { a: ACCOUNT, b: BUCKET, from: scope.from, to: scope.to } };
    const first = await rows<Record<string, unknown>>(s);
    console.log(`#${stmts.length} ${stmt.replace(/\s+/g, ' ').slice(0, 110)} (${first.length} rows)`);
    if (flag('print')) console.log(JSON.stringify(first.slice(0, Number(flag('print')))));
    stmts.push(s);
  }
  const wall: number[][] = stmts.map(() => []);
  const cpu: number[][] = stmts.map(() => []);
  for (let i = 0; i < runs + 2; i++) {
    for (const [k, s] of stmts.entries()) {
      const c = cpuMs();
      const t = performance.now();
      await rows(s);
      if (i < 2) continue;
      wall[k]!.push(performance.now() - t);
      cpu[k]!.push(cpuMs() - c);
    }
  }
  for (const k of stmts.keys())
    console.log(
      `#${k}`.padEnd(5) +
        `wall ${fmt(q(wall[k]!, 0.5))} /${fmt(q(wall[k]!, 0.95))}   cpu ${fmt(q(cpu[k]!, 0.5))} (min ${fmt(Math.min(...cpu[k]!))})`,
    );
}

try {
  if (cmd === 'load') await load();
  else if (cmd === 'time') await time();
  else if (cmd === 'compare') await compare();
  else if (cmd === 'dump') await dump();
  else if (cmd === 'sql') await sql();
  else if (cmd === 'state') await state();
  else if (cmd === 'migrate') await migrate();
  else if (cmd === 'optimize') await optimize();
  else throw new Error(`unknown command ${cmd}`);
} finally {
  await ch.close();
  await server?.stop();
}
