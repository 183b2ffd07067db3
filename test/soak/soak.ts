/**
 * `npm run soak -- --minutes N [--rate R] [--keep-data]`: a steady load for N minutes against the
 * stack started as `npm start` starts it (build, then `node dist/services/main.js`, which starts
 * Kafka and Postgres itself), with its own DATA_DIR and free ports. See docs/reliability.md.
 *
 * 1. Measures the maximum end-to-end rate (a 20 s burst, as fast as acknowledged, until every
 *    record is committed by the processor), unless --rate is given.
 * 2. Drives half that rate for N minutes; every 10 s prints and records the service's RSS and heap
 *    and event-loop delay (GET /healthz), the RSS of the ingest child process `npm start` forks
 *    (/proc), the `processor` group's lag on `traffic.requests`, and the freshness of the last
 *    complete 10 s window (GET /pipeline/stats).
 * 3. Reports RSS at start and end and the least-squares slope of RSS over time, per process. Exit
 *    code 1 when the run lasted at least 10 minutes and a process's RSS kept growing: slope > 2
 *    MB/min over the steady part (after the warm-up) AND over its second half, i.e. a trend that
 *    does not level off.
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { CONSUMER_GROUPS, TOPICS } from '../../services/shared/topics.js';
import {
  build,
  descendants,
  freePort,
  loadAverage,
  memory,
  poll,
  ROOT,
  startService,
  type ServiceHandle,
} from '../bench/bench-stack.js';
import { groupLag, lagAdmin } from '../faults/consumer-lag.js';
import { IngestLoad } from '../faults/ingest-load.js';

const SAMPLE_MS = 10_000;
/** growth threshold, MB per minute, and the shortest run it is judged on */
const SLOPE_LIMIT_MB_MIN = 2;
const MIN_JUDGED_MINUTES = 10;

const { values: opt } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    rate: { type: 'string' },
    'burst-seconds': { type: 'string', default: '20' },
    'keep-data': { type: 'boolean', default: false },
  },
});
const minutes = Number(opt.minutes);
if (!(minutes > 0)) throw new Error('--minutes must be a positive number');

interface Sample {
  t: number; // seconds since the steady load started
  /** the main service process (every role but ingest), from its /healthz */
  rssMb: number;
  /** the ingest child process(es) `npm start` forks (services/ingest/ingest.process.ts), from /proc */
  ingestRssMb: number | null;
  heapMb: number;
  eld: { p50: number; p99: number; max: number };
  lag: number;
  window: { received: string; stored: number; p50: number; p99: number; max: number };
  acked: number;
  load1: number;
}

interface Health {
  rssBytes: number;
  heapUsedBytes: number;
  eventLoopDelayMs: { p50: number; p99: number; max: number };
}

const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const runDir = path.join(ROOT, '.cache', 'soak-runs', stamp);
const log = (s: string) => console.log(`[soak ${new Date().toISOString().slice(11, 19)}] ${s}`);
const mb = (b: number) => Math.round((b / 1024 / 1024) * 10) / 10;

/** Least-squares slope of y over x. */
function slope(points: [number, number][]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

async function main(): Promise<number> {
  fs.mkdirSync(runDir, { recursive: true, mode: 0o755 });
  fs.chmodSync(runDir, 0o755);
  log('npm run build');
  await build(log);
  const dataDir = path.join(runDir, 'data');
  const env: Record<string, string> = {
    PORT: String(await freePort()),
    INGEST_PORT: String(await freePort()),
    KAFKA_PORT: String(await freePort()),
    KAFKA_CONTROLLER_PORT: String(await freePort()),
    PG_PORT: String(await freePort()),
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    // The soak polls the management API every 10 s; the demo account is on the standard plan.
    RATE_LIMIT_STANDARD: '1000000000',
  };
  log(`starting the service (DATA_DIR ${path.relative(ROOT, dataDir)})`);
  const service: ServiceHandle = await startService({
    env,
    logFile: path.join(runDir, 'service.log'),
    expectDemo: true,
  });
  const demo = service.demo!;
  const admin = lagAdmin(service.kafkaBrokers);
  await admin.connect();
  const lag = async () => (await groupLag(admin, CONSUMER_GROUPS.processor, TOPICS.requests)).lag;
  const get = async <T>(p: string): Promise<T> => {
    const res = await fetch(service.apiUrl + p, {
      headers: { authorization: `Bearer ${demo.apiToken}` },
      signal: AbortSignal.timeout(30_000),
    });
    if (res.status !== 200) throw new Error(`GET ${p}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
  const loadOpts = {
    ingestUrl: service.ingestUrl,
    bucketSid: demo.bucketSid,
    token: demo.apiToken,
    trackSids: false,
    maxRecords: Number.MAX_SAFE_INTEGER,
  };

  try {
    let rate = opt.rate ? Number(opt.rate) : 0;
    let maxRate: number | null = null;
    if (!rate) {
      const seconds = Number(opt['burst-seconds']);
      log(`measuring the maximum end-to-end rate: ${seconds} s as fast as acknowledged`);
      const burst = new IngestLoad({ ...loadOpts, rate: 0, senders: 8, batch: 100 });
      const t0 = performance.now();
      burst.start();
      await new Promise((r) => setTimeout(r, seconds * 1000));
      await burst.stop();
      await poll(async () => (await lag()) === 0, {
        timeoutMs: 600_000,
        intervalMs: 250,
        what: 'burst drained',
      });
      const elapsed = (performance.now() - t0) / 1000;
      maxRate = Math.round(burst.ackedCount / elapsed);
      rate = Math.max(1, Math.round(maxRate / 2));
      log(
        `burst: ${burst.ackedCount} records acknowledged and stored in ${elapsed.toFixed(1)} s = ${maxRate}/s; ` +
          `statuses ${JSON.stringify(burst.statusCounts())}`,
      );
    }
    log(`steady load: ${rate} records/s for ${minutes} min (batches of 50, 4 senders)`);
    const load = new IngestLoad({ ...loadOpts, rate, senders: 4, batch: 50 });
    const samples: Sample[] = [];
    const jsonl = path.join(runDir, 'samples.jsonl');
    const start = performance.now();
    const wallStart = Date.now();
    load.start();
    const end = start + minutes * 60_000;
    for (let next = start + SAMPLE_MS; next <= end + 1; next += SAMPLE_MS) {
      await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
      // The last complete window: received 10-20 s ago, so its records had 10 s to be stored;
      // never earlier than the steady load (the burst's records are not part of it).
      const now = wallStart + (next - start);
      const from = new Date(Math.max(wallStart, now - 2 * SAMPLE_MS)).toISOString();
      const to = new Date(now - SAMPLE_MS).toISOString();
      const [health, l, win] = await Promise.all([
        fetch(`${service.apiUrl}/healthz`).then((r) => r.json() as Promise<Health>),
        lag(),
        get<{ stored: number; freshness: { p50: number; p99: number; max: number } }>(
          `/v1/accounts/${demo.accountSid}/pipeline/stats?bucketSid=${demo.bucketSid}&startDate=${from}&endDate=${to}`,
        ),
      ]);
      const children = descendants(service.pid, 'node');
      const s: Sample = {
        t: Math.round((next - start) / 1000),
        rssMb: mb(health.rssBytes),
        ingestRssMb: children.length ? mb(children.reduce((sum, pid) => sum + memory(pid).rss, 0)) : null,
        heapMb: mb(health.heapUsedBytes),
        eld: health.eventLoopDelayMs,
        lag: l,
        window: {
          received: `${from.slice(11, 19)}-${to.slice(11, 19)}`,
          stored: win.stored,
          ...win.freshness,
        },
        acked: load.ackedCount,
        load1: loadAverage()[0] ?? NaN,
      };
      samples.push(s);
      fs.appendFileSync(jsonl, `${JSON.stringify(s)}\n`);
      log(
        `t=${String(s.t).padStart(4)}s rss ${s.rssMb} MB (ingest ${s.ingestRssMb ?? '-'} MB) heap ${s.heapMb} MB | loop delay p50 ${s.eld.p50} p99 ${s.eld.p99} max ${s.eld.max} ms | ` +
          `lag ${s.lag} | window ${s.window.received}: ${s.window.stored} stored, freshness p50 ${s.window.p50} p99 ${s.window.p99} ms | ` +
          `acked ${s.acked} | load ${s.load1}`,
      );
    }
    await load.stop();
    await poll(async () => (await lag()) === 0, { timeoutMs: 300_000, intervalMs: 250, what: 'drained' });

    // Warm-up (JIT, chDB caches, first parts and merges) is left out of the trend.
    const warmupS = Math.min(120, (minutes * 60) / 5);
    const steady = samples.filter((s) => s.t > warmupS);
    const half = steady.slice(Math.floor(steady.length / 2));
    // Each process is judged on its own: a leak in either one is a leak.
    const trend = (rss: (s: Sample) => number | null) => {
      const perMin = (list: Sample[]) => {
        const pts = list.flatMap((s): [number, number][] => {
          const v = rss(s);
          return v === null ? [] : [[s.t / 60, v]];
        });
        return Math.round(slope(pts) * 100) / 100;
      };
      const all = samples.map(rss).filter((v): v is number => v !== null);
      const slopes = { all: perMin(samples), afterWarmup: perMin(steady), lastHalf: perMin(half) };
      return {
        startMb: all[0],
        endMb: all[all.length - 1],
        maxMb: all.length ? Math.max(...all) : undefined,
        slopeMbPerMin: slopes,
        growing: slopes.afterWarmup > SLOPE_LIMIT_MB_MIN && slopes.lastHalf > SLOPE_LIMIT_MB_MIN,
      };
    };
    const mainRss = trend((s) => s.rssMb);
    const ingestRss = samples.some((s) => s.ingestRssMb !== null) ? trend((s) => s.ingestRssMb) : undefined;
    const judged = minutes >= MIN_JUDGED_MINUTES;
    const growing = mainRss.growing || (ingestRss?.growing ?? false);
    const statuses = load.statusCounts();
    const windows = samples.filter((s) => s.window.stored > 0);
    const report = {
      minutes,
      rate,
      maxRate,
      acked: load.ackedCount,
      statuses,
      rss: { service: mainRss, ingest: ingestRss, warmupSeconds: warmupS, limitMbPerMin: SLOPE_LIMIT_MB_MIN },
      heapStartMb: samples[0]?.heapMb,
      heapEndMb: samples[samples.length - 1]?.heapMb,
      eventLoopP99MaxMs: Math.max(...samples.map((s) => s.eld.p99)),
      lagMax: Math.max(...samples.map((s) => s.lag)),
      freshnessP99MaxMs: Math.max(...windows.map((s) => s.window.p99)),
      freshnessP99MedianMs: [...windows.map((s) => s.window.p99)].sort((a, b) => a - b)[
        Math.floor(windows.length / 2)
      ],
      verdict: !judged
        ? `not judged (< ${MIN_JUDGED_MINUTES} min)`
        : growing
          ? 'RSS GROWING'
          : 'no upward RSS trend',
    };
    fs.writeFileSync(path.join(runDir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
    log(`report (${path.relative(ROOT, runDir)}/report.json):\n${JSON.stringify(report, null, 2)}`);
    const bad = Object.keys(statuses).filter((k) => k !== '202');
    if (bad.length) log(`non-202 answers: ${JSON.stringify(statuses)}`);
    return judged && growing ? 1 : 0;
  } finally {
    await admin.disconnect().catch(() => undefined);
    log('stopping the service');
    await service.stop();
    if (!opt['keep-data']) fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(2);
  },
);
