/**
 * `npm run bench`: Tapline's speed in one command, measured against the limits of its own parts in
 * the same run. See bench/README.md for what each figure means.
 *
 * Phases (in order): start the stack as `npm start` does → warm-up → end-to-end batches (×runs) →
 * end-to-end one record per request → the Node.js SDK's batches end to end (sdk-phase.ts) → OTLP
 * `/v1/traces` spans/s (otlp.ts) → Shape A redaction against no rules (shape-a.ts) → freshness
 * at 50% and 10% of the best batch rate → limits (raw ClickHouse insert, raw Kafka produce→consume) → query latency
 * over 1M and 10M stored records (loaded directly into ClickHouse while the service is stopped) →
 * table + JSON.
 */
import { fork } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Partitioners } from 'kafkajs';
import {
  build,
  cpuSeconds,
  descendants,
  freePort,
  loadAverage,
  memory,
  poll,
  ROOT,
  startRoleProcess,
  startService,
  type ServiceHandle,
} from './bench-stack.js';
import type { ChLimitConfig, ChLimitResult } from './ch-limit.js';
import type { KafkaLimitConfig, KafkaLimitResult } from './kafka-limit.js';
import { measureDashboardPage } from './dashboard-page.js';
import { clickhouseServerUrl, type LargeSetConfig, type LargeSetResult } from './large-set.js';
import type { LoadgenConfig, LoadgenResult } from './loadgen.js';
import { printSummary, summarise, type ProfileSummary } from './profile-summary.js';
import { rangeTable, timeRangeQueries } from './range-queries.js';
import { timeReleaseAndSlos } from './slo-impact.js';

const PHASES = [
  'batch',
  'single',
  'sdk',
  'otlp',
  'shapea',
  'freshness',
  'limits',
  'query',
  'dashboard',
  // Opt-in (not in the default run: it loads its own 10M-record set): the consumers list, a
  // consumer's page and a consumer's metrics at scale (test/bench/consumers.ts).
  'consumers',
] as const;
type Phase = (typeof PHASES)[number];

const { values: opt } = parseArgs({
  options: {
    records: { type: 'string', default: '200000' },
    runs: { type: 'string', default: '2' },
    // > 0: the batch runs alternate between records without a consumer (odd runs) and records each
    // with one of this many consumers (even runs), e.g. --runs 4 --batch-consumers 100000.
    'batch-consumers': { type: 'string', default: '0' },
    // `alternate` as above; `all`: every batch run has consumers (no baseline in the same run: the
    // consumer runs' merges then never fall into a run without consumers; compare the means with a
    // run of the same length without --batch-consumers).
    'batch-consumers-runs': { type: 'string', default: 'alternate' },
    // `account`: the batch, freshness and single phases run with the demo account's redactions (a
    // new account's recommended ones, as a new user has them); `none` deletes them first, to
    // compare with a build from before that default (or to see what they cost).
    'batch-redactions': { type: 'string', default: 'account' },
    'single-records': { type: 'string', default: '40000' },
    rate: { type: 'string', default: '0' },
    concurrency: { type: 'string', default: '32' },
    'single-concurrency': { type: 'string', default: '256' },
    'sdk-requests': { type: 'string', default: '100000' },
    'sdk-connections': { type: 'string', default: '32' },
    'sdk-direct-records': { type: 'string', default: '100000' },
    'shapea-records': { type: 'string', default: '30000' },
    'shapea-rounds': { type: 'string', default: '3' },
    batch: { type: 'string', default: '100' },
    generators: { type: 'string', default: '2' },
    'freshness-seconds': { type: 'string', default: '20' },
    // > 0: the records/s the freshness phase takes as the maximum instead of the best batch run's
    // (the same load for builds compared in alternated runs).
    'freshness-max': { type: 'string', default: '0' },
    'limit-records': { type: 'string', default: '100000' },
    'large-days': { type: 'string', default: '1' },
    // Rounds per call of the query set by range (1 h, 24 h, 7 d, 30 d); 0 leaves the set out.
    'range-rounds': { type: 'string', default: '8' },
    'skip-large': { type: 'boolean', default: false },
    sets: { type: 'string', default: '1000000,10000000' },
    only: { type: 'string', default: PHASES.filter((p) => p !== 'consumers').join(',') },
    // The consumers phase's set: records, distinct consumers, days, calls per query, and the chDB
    // directory it is kept in between runs (loaded once; default .cache/consumers-<records>).
    'consumer-records': { type: 'string', default: '10000000' },
    'consumer-count': { type: 'string', default: '100000' },
    'consumer-days': { type: 'string', default: '30' },
    'consumer-runs': { type: 'string', default: '20' },
    'consumer-dir': { type: 'string' },
    json: { type: 'string' },
    profile: { type: 'boolean', default: false },
    'service-log-level': { type: 'string', default: 'warn' },
    'service-node-options': { type: 'string' },
    'service-dist': { type: 'string' },
    'keep-data': { type: 'boolean', default: false },
    // A data directory of its own that outlives the run: the first run loads the query sets into
    // it, later runs with the same directory reuse the stack and every set already loaded (the
    // 100M set loads once). Implies --keep-data.
    'data-dir': { type: 'string' },
    'use-running': { type: 'boolean', default: false },
    api: { type: 'string' },
    ingest: { type: 'string' },
    token: { type: 'string' },
    account: { type: 'string' },
    bucket: { type: 'string', multiple: true },
    kafka: { type: 'string' },
    pid: { type: 'string' },
    // `server`: the service's ClickHouse is a server process (CLICKHOUSE_MODE=server, its CPU counted
    // with the service's) and limit (a) inserts over HTTP into a server of its own.
    clickhouse: { type: 'string', default: 'embedded' },
    // Processor processes on a `traffic.requests` of as many partitions (server mode only: a chDB
    // directory is opened by one process). The first runs in the service, the others with
    // ROLES=processor against the same Kafka, Postgres and ClickHouse server.
    processors: { type: 'string', default: '1' },
    // K=V settings of the service (and the extra processors), e.g. PROCESSOR_FETCH_MIN_BYTES=16777216.
    'service-env': { type: 'string', multiple: true },
    help: { type: 'boolean', default: false },
  },
});

if (opt.help) {
  console.log(fs.readFileSync(path.join(ROOT, 'bench', 'README.md'), 'utf8').split('## Figures')[0]);
  process.exit(0);
}

const num = (k: keyof typeof opt) => Number(opt[k]);
if (opt.clickhouse !== 'embedded' && opt.clickhouse !== 'server') {
  throw new Error(`--clickhouse is embedded or server, not ${opt.clickhouse}`);
}
const chServer = opt.clickhouse === 'server';
const processors = num('processors');
if (!Number.isInteger(processors) || processors < 1) throw new Error('--processors is a whole number ≥ 1');
if (processors > 1 && !chServer) throw new Error('--processors 2 or more needs --clickhouse server');
const serviceEnv: Record<string, string> = {};
for (const kv of opt['service-env'] ?? []) {
  const eq = kv.indexOf('=');
  if (eq <= 0) throw new Error(`--service-env takes K=V, not ${kv}`);
  serviceEnv[kv.slice(0, eq)] = kv.slice(eq + 1);
}
/** The processor processes beyond the service's own (--processors): their CPU is the service's. */
const extraProcessorPids: number[] = [];
/** The service's ClickHouse server in server mode. */
let chServerUrl: string | undefined;
/** The ClickHouse server the local stack starts in server mode (infra/local/clickhouse-server.launcher.ts). */
const CH_SERVER_COMM = /^chlocal-/;
const only = new Set(String(opt.only).split(',') as Phase[]);
// --profile covers one load phase: the batch runs, or the one-record-per-request phase when
// `--only single` asks for it; the profile is written when the service stops after it. With
// `--only query` it covers the query calls (the service restarted after the load).
if (opt.profile && !(only.size === 1 && only.has('query'))) {
  const phase: Phase = only.has('batch') || !only.has('single') ? 'batch' : 'single';
  only.clear();
  only.add(phase);
}
const ENVIRONMENTS = ['prod01', 'stag01', 'dev001'];
const SEARCH_Q = 'path:/v1/orders/* duration:>500';
/** What the query set by range names in the large sets (large-set.ts). */
const RANGE_SUBJECT = {
  endpoint: '/v1/orders/{id}',
  method: 'GET',
  pathPrefix: '/v1/orders/',
  exactPath: '/v1/users/42',
  host: 'partners.example.com',
  tag: 'release=2026.11.3',
  word: 'refunds',
};
/** The query set by range of each large set, printed after the figures. */
const rangeTables: string[] = [];
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const dataDir = opt['data-dir']
  ? path.resolve(String(opt['data-dir']))
  : path.join(ROOT, '.cache', `bench-${stamp}`);
if (opt['data-dir']) opt['keep-data'] = true;
/**
 * What a --data-dir run leaves for the next one: the demo account's credentials (the token is
 * printed once, at the first start) and the large-set bucket with the records loaded into it.
 */
interface KeptStack {
  account: string;
  token: string;
  buckets: string[];
  largeBucket?: string;
  largeLoaded?: number;
}
const keptFile = path.join(dataDir, 'bench-kept.json');
const kept: KeptStack | undefined =
  opt['data-dir'] && fs.existsSync(keptFile)
    ? (JSON.parse(fs.readFileSync(keptFile, 'utf8')) as KeptStack)
    : undefined;
const demoOf = (t: Target): KeptStack => ({ account: t.account, token: t.token, buckets: t.buckets });
const saveKept = (k: KeptStack) => {
  if (opt['data-dir']) fs.writeFileSync(keptFile, JSON.stringify(k, null, 2));
};
const t0 = performance.now();

function log(msg: string): void {
  const s = ((performance.now() - t0) / 1000).toFixed(0).padStart(4);
  process.stderr.write(`[bench ${s}s load ${loadAverage()[0]?.toFixed(1)}] ${msg}\n`);
}

function quantile(sorted: number[], q: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
const round = (x: number, d = 1) => (Number.isFinite(x) ? Math.round(x * 10 ** d) / 10 ** d : null);

/** Forks a bench module with tsx, sends it one message, resolves with its `done` result. */
function child<C, R>(module: string, config: C): Promise<R> {
  return new Promise((resolve, reject) => {
    const c = fork(path.join(import.meta.dirname, module), [], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    c.on('message', (m: { type: string; result?: R; message?: string }) => {
      if (m.type === 'done') resolve(m.result as R);
      else if (m.type === 'error') reject(new Error(`${module}: ${m.message}`));
    });
    c.on('exit', (code) => {
      if (code !== 0) reject(new Error(`${module} exited ${code}`));
    });
    c.send(config as object);
  });
}

interface Target {
  api: string;
  ingest: string;
  token: string;
  account: string;
  buckets: string[];
  largeBucket?: string;
  kafka?: string[];
  pid?: number;
}

async function call<T>(
  target: Target,
  method: string,
  p: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const res = await fetch(`${target.api}${p}`, {
    method,
    headers: {
      authorization: `Bearer ${target.token}`,
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/**
 * Deletes the account's redaction rules (the recommended ones a new account starts with) and
 * waits until the processor's snapshot has seen it: the returned count of rules deleted.
 */
async function deleteRedactions(target: Target): Promise<number> {
  const list = await call<{ records: { sid: string }[] }>(
    target,
    'GET',
    `/v1/accounts/${target.account}/redactions?limit=100`,
  );
  if (list.status !== 200) throw new Error(`listing the redactions answered ${list.status}`);
  for (const { sid } of list.body.records) {
    const res = await call(target, 'DELETE', `/v1/accounts/${target.account}/redactions/${sid}`);
    if (res.status >= 300) throw new Error(`deleting redaction ${sid} answered ${res.status}`);
  }
  // The processor reloads its rule snapshot on a change notice; a pause covers the reload.
  if (list.body.records.length) await new Promise((r) => setTimeout(r, 3000));
  return list.body.records.length;
}

interface Stats {
  stored: number;
  lastStoredAt: string | null;
  freshness: { p50: number; p99: number; max: number };
}

async function pipelineStats(target: Target, bucket: string, since: string): Promise<Stats> {
  const r = await call<Stats>(
    target,
    'GET',
    `/v1/accounts/${target.account}/pipeline/stats?bucketSid=${bucket}&startDate=${encodeURIComponent(since)}`,
  );
  if (r.status !== 200) throw new Error(`pipeline/stats answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

interface PhaseResult {
  label: string;
  mode: 'batch' | 'single';
  records: number;
  acked: number;
  rejected: number;
  statuses: Record<string, number>;
  errors: number;
  sendSeconds: number;
  e2eSeconds: number;
  /** acknowledged records / (first send → last stored) */
  e2eRecordsPerSec: number;
  /** acknowledged records / (first send → last acknowledgement) */
  ingestRecordsPerSec: number;
  ackLatencyP50Ms: number;
  ackLatencyP99Ms: number;
  freshnessP50Ms: number;
  freshnessP99Ms: number;
  freshnessMaxMs: number;
  serviceCpuSecondsPer100k: number | null;
  /** the part of serviceCpuSecondsPer100k spent in the ingest child process */
  ingestProcessCpuSecondsPer100k: number | null;
  brokerCpuSecondsPer100k: number | null;
  /** server mode: the part of serviceCpuSecondsPer100k spent in the ClickHouse server process */
  clickhouseServerCpuSecondsPer100k?: number | null;
  /** server mode: the processor's blocks (each block is two insert queries: its offset range, its rows) */
  blocks?: number;
  recordsPerBlock?: number;
  /** blocks the service's processor stored for the phase (its /metrics), and per second end to end */
  processorBlocks: number | null;
  processorBlocksPerSec: number | null;
  generatorCpuSeconds: number;
  loadAverage: number[];
}

/** Insert queries the service's ClickHouse server has run (system.events), NaN when unknown. */
/**
 * Blocks the service's processor stored so far (`tapline_processor_blocks_total`, all triggers, from
 * its `GET /metrics`, which answers loopback clients): the processors beyond the service's own are
 * not counted.
 */
async function processorBlocks(target: Target): Promise<number> {
  try {
    const res = await fetch(`${target.api}/metrics`);
    if (!res.ok) return NaN;
    let n = 0;
    for (const line of (await res.text()).split('\n'))
      if (line.startsWith('tapline_processor_blocks_total{'))
        n += Number(line.slice(line.lastIndexOf(' ') + 1));
    return n;
  } catch {
    return NaN;
  }
}

async function serverInsertQueries(): Promise<number> {
  if (!chServerUrl) return NaN;
  try {
    const q = "SELECT value FROM system.events WHERE event = 'InsertQuery'";
    const res = await fetch(`${chServerUrl}/?query=${encodeURIComponent(q)}`);
    return res.ok ? Number((await res.text()).trim() || 0) : NaN;
  } catch {
    return NaN;
  }
}

interface LoadParams {
  mode: 'batch' | 'single';
  records: number;
  connections: number;
  rate: number;
  /** batch records with a consumer among this many (LoadgenConfig.consumers) */
  consumers?: number;
}

/** Sends one phase's load from the generator processes and waits for every answer. */
async function sendLoad(target: Target, label: string, p: LoadParams, onStart?: () => void) {
  const generators = Math.max(1, num('generators'));
  const per = Math.ceil(p.records / generators);
  const pool = p.mode === 'batch' ? 20_000 : 10_000;
  log(`${label}: ${p.records} records, ${p.mode}, ${p.connections} connections, rate ${p.rate || 'max'}`);
  const kids = Array.from({ length: generators }, (_, g) => {
    const c = fork(path.join(import.meta.dirname, 'loadgen.ts'), [], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const cfg: LoadgenConfig = {
      mode: p.mode,
      ingestUrl: target.ingest,
      token: target.token,
      buckets: target.buckets,
      environments: ENVIRONMENTS,
      records: per,
      batch: num('batch'),
      connections: Math.max(1, Math.ceil(p.connections / generators)),
      rate: p.rate ? p.rate / generators : 0,
      poolRecords: Math.min(pool, per),
      seed: 1000 + g * 7919 + label.length,
      consumers: p.consumers ?? 0,
    };
    const ready = new Promise<void>((resolve, reject) => {
      c.on('message', (m: { type: string }) => m.type === 'ready' && resolve());
      c.on('exit', (code) => reject(new Error(`load generator exited ${code}`)));
    });
    const done = new Promise<LoadgenResult>((resolve, reject) => {
      c.on('message', (m: { type: string; result?: LoadgenResult; message?: string }) => {
        if (m.type === 'done') resolve(m.result!);
        if (m.type === 'error') reject(new Error(m.message));
      });
    });
    c.send({ type: 'config', config: cfg });
    return { c, ready, done };
  });
  await Promise.all(kids.map((k) => k.ready));
  onStart?.();
  const tGo = Date.now();
  for (const k of kids) k.c.send({ type: 'go' });
  const results = await Promise.all(kids.map((k) => k.done));
  const lastAck = Math.max(...results.map((r) => r.lastAckMs));
  const acked = results.reduce((s, r) => s + r.ackedRecords, 0);
  const statuses: Record<string, number> = {};
  for (const r of results)
    for (const [k, v] of Object.entries(r.statuses)) statuses[k] = (statuses[k] ?? 0) + v;
  const latencies = results.flatMap((r) => r.latencies).sort((a, b) => a - b);
  log(
    `${label}: sent in ${((lastAck - tGo) / 1000).toFixed(1)} s, acked ${acked}, statuses ${JSON.stringify(statuses)}`,
  );
  return { results, tGo, lastAck, acked, statuses, latencies };
}

/**
 * Limit (c): the same load generators against http-floor.ts (read + JSON.parse each body, answer
 * 202; nothing else), one run per ingest shape. Rates are acknowledged records per second of
 * sending; the floor process's own CPU per 100,000 records beside them.
 */
async function limitHttp(target: Target): Promise<Record<'batch' | 'single', HttpLimitResult>> {
  const child = fork(path.join(import.meta.dirname, 'http-floor.ts'), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once('message', (m: { port: number }) => resolve(m.port));
      child.once('exit', (code) => reject(new Error(`http floor exited ${code}`)));
    });
    const cpu = () =>
      new Promise<number>((resolve) => {
        child.once('message', (m: { seconds: number }) => resolve(m.seconds));
        child.send({ type: 'cpu' });
      });
    const floor: Target = { ...target, ingest: `http://127.0.0.1:${port}`, pid: undefined };
    const out = {} as Record<'batch' | 'single', HttpLimitResult>;
    for (const mode of ['batch', 'single'] as const) {
      const p: LoadParams =
        mode === 'batch'
          ? { mode, records: num('limit-records') * 2, connections: num('concurrency'), rate: 0 }
          : { mode, records: num('single-records'), connections: num('single-concurrency'), rate: 0 };
      const cpu0 = await cpu();
      const sent = await sendLoad(floor, `limit (c) HTTP floor, ${mode}`, p);
      const serverCpuSeconds = (await cpu()) - cpu0;
      const r: HttpLimitResult = {
        mode,
        records: sent.acked,
        rate: sent.acked / ((sent.lastAck - sent.tGo) / 1000),
        ackP50Ms: quantile(sent.latencies, 0.5),
        ackP99Ms: quantile(sent.latencies, 0.99),
        serverCpuSeconds,
        cpuSecondsPer100k: (serverCpuSeconds / sent.acked) * 1e5,
        generatorCpuSeconds: sent.results.reduce((a, x) => a + x.cpu, 0),
      };
      log(
        `limit (c) HTTP floor, ${mode}: ${Math.round(r.rate)} records/s, server ${r.cpuSecondsPer100k.toFixed(2)} CPU s per 100k, generators ${r.generatorCpuSeconds.toFixed(1)} CPU s`,
      );
      out[mode] = r;
    }
    return out;
  } finally {
    child.kill();
  }
}

/** cores ÷ the CPU seconds per record of the HTTP floor (server + generators), Kafka and ClickHouse limits. */
function ceiling(
  http: HttpLimitResult,
  kafka: { cpuSecondsPer100k: number },
  ch: { cpuSecondsPer100k: number },
): number {
  const httpPer100k = http.cpuSecondsPer100k + (http.generatorCpuSeconds / http.records) * 1e5;
  return (os.cpus().length * 1e5) / (httpPer100k + kafka.cpuSecondsPer100k + ch.cpuSecondsPer100k);
}

interface HttpLimitResult {
  mode: 'batch' | 'single';
  records: number;
  rate: number;
  ackP50Ms: number;
  ackP99Ms: number;
  serverCpuSeconds: number;
  cpuSecondsPer100k: number;
  generatorCpuSeconds: number;
}

async function runPhase(target: Target, label: string, p: LoadParams): Promise<PhaseResult> {
  // received_at of this phase's records is at or after this instant (same clock).
  let since = '';
  let svc0 = NaN;
  // The ingest workers (INGEST_PROCESSES): every Node child of the service.
  const ingestPids = target.pid ? descendants(target.pid, 'node') : [];
  const ingestCpu = () => (ingestPids.length ? ingestPids.reduce((s, p) => s + cpuSeconds(p), 0) : NaN);
  let ing0 = NaN;
  const brokerPid = target.pid ? descendants(target.pid, 'java')[0] : undefined;
  let brk0 = NaN;
  const chPid = chServer && target.pid ? descendants(target.pid, CH_SERVER_COMM)[0] : undefined;
  let chs0 = NaN;
  const ins0 = await serverInsertQueries();
  const blk0 = await processorBlocks(target);
  const { results, tGo, lastAck, acked, statuses, latencies } = await sendLoad(target, label, p, () => {
    since = new Date().toISOString();
    svc0 = target.pid ? serviceCpuSeconds(target.pid) : NaN;
    ing0 = ingestCpu();
    brk0 = brokerPid ? cpuSeconds(brokerPid) : NaN;
    chs0 = chPid ? cpuSeconds(chPid) : NaN;
  });

  let stats: Stats[] = [];
  let lastTotal = -1;
  let lastProgress = Date.now();
  await poll(
    async () => {
      stats = await Promise.all(target.buckets.map((b) => pipelineStats(target, b, since)));
      const total = stats.reduce((s, x) => s + x.stored, 0);
      if (total !== lastTotal) {
        lastTotal = total;
        lastProgress = Date.now();
      } else if (Date.now() - lastProgress > 60_000) {
        throw new Error(`stored count stuck at ${total} of ${acked}`);
      }
      return total >= acked;
    },
    { timeoutMs: 30 * 60_000, intervalMs: 250, what: `${label}: every acknowledged record stored` },
  );
  const svc1 = target.pid ? serviceCpuSeconds(target.pid) : NaN;
  const ing1 = ingestCpu();
  const brk1 = brokerPid ? cpuSeconds(brokerPid) : NaN;
  const chs1 = chPid ? cpuSeconds(chPid) : NaN;
  const blocks = ((await serverInsertQueries()) - ins0) / 2;
  const processorBlockCount = (await processorBlocks(target)) - blk0;
  const lastStored = Math.max(...stats.map((s) => (s.lastStoredAt ? Date.parse(s.lastStoredAt) : 0)));
  const e2eSeconds = (lastStored - tGo) / 1000;
  const res: PhaseResult = {
    label,
    mode: p.mode,
    records: results.reduce((s, r) => s + r.sentRecords, 0),
    acked,
    rejected: results.reduce((s, r) => s + r.rejectedRecords, 0),
    statuses,
    errors: results.reduce((s, r) => s + r.errors, 0),
    sendSeconds: (lastAck - tGo) / 1000,
    e2eSeconds,
    e2eRecordsPerSec: acked / e2eSeconds,
    ingestRecordsPerSec: acked / ((lastAck - tGo) / 1000),
    ackLatencyP50Ms: quantile(latencies, 0.5),
    ackLatencyP99Ms: quantile(latencies, 0.99),
    // Per-bucket quantiles cannot be merged: the worst bucket is reported.
    freshnessP50Ms: Math.max(...stats.map((s) => s.freshness.p50)),
    freshnessP99Ms: Math.max(...stats.map((s) => s.freshness.p99)),
    freshnessMaxMs: Math.max(...stats.map((s) => s.freshness.max)),
    serviceCpuSecondsPer100k: Number.isFinite(svc1 - svc0) ? ((svc1 - svc0) / acked) * 1e5 : null,
    ingestProcessCpuSecondsPer100k: Number.isFinite(ing1 - ing0) ? ((ing1 - ing0) / acked) * 1e5 : null,
    brokerCpuSecondsPer100k: Number.isFinite(brk1 - brk0) ? ((brk1 - brk0) / acked) * 1e5 : null,
    ...(chServer
      ? {
          clickhouseServerCpuSecondsPer100k: Number.isFinite(chs1 - chs0)
            ? ((chs1 - chs0) / acked) * 1e5
            : null,
          blocks,
          recordsPerBlock: acked / blocks,
        }
      : {}),
    processorBlocks: Number.isFinite(processorBlockCount) ? processorBlockCount : null,
    processorBlocksPerSec: Number.isFinite(processorBlockCount) ? processorBlockCount / e2eSeconds : null,
    generatorCpuSeconds: results.reduce((s, r) => s + r.cpu, 0),
    loadAverage: loadAverage(),
  };
  const server = chServer
    ? `, ClickHouse server ${res.clickhouseServerCpuSecondsPer100k?.toFixed(2)} CPU s per 100k, ~${Math.round(blocks)} blocks of ~${Math.round(acked / blocks)} records`
    : '';
  log(
    `${label}: ${Math.round(res.e2eRecordsPerSec)} records/s end to end (${e2eSeconds.toFixed(1)} s), ack p50 ${res.ackLatencyP50Ms.toFixed(1)} ms p99 ${res.ackLatencyP99Ms.toFixed(1)} ms, freshness p50 ${res.freshnessP50Ms} ms p99 ${res.freshnessP99Ms} ms, service ${res.serviceCpuSecondsPer100k?.toFixed(2)} CPU s per 100k, processor ${processorBlockCount} blocks (${res.processorBlocksPerSec?.toFixed(1)}/s)${server}`,
  );
  return res;
}

interface QueryTiming {
  path: string;
  status: number;
  medianMs: number | null;
  p95Ms: number | null;
  note?: string;
}

async function timeQueries(target: Target, calls: number): Promise<Record<string, QueryTiming>> {
  const a = target.account;
  const b = target.largeBucket!;
  const paths: Record<string, string> = {
    metricsSummary: `/v1/accounts/${a}/metrics/summary?bucketSid=${b}`,
    metricsThroughput: `/v1/accounts/${a}/metrics/throughput?bucketSid=${b}`,
    metricsPerformance: `/v1/accounts/${a}/metrics/performance?bucketSid=${b}`,
    metricsErrors: `/v1/accounts/${a}/metrics/errors?bucketSid=${b}`,
    requestsFiltered: `/v1/accounts/${a}/buckets/${b}/requests?method=POST&statusCode=500`,
    requestsSearch: `/v1/accounts/${a}/buckets/${b}/requests?q=${encodeURIComponent(SEARCH_Q)}`,
  };
  const out: Record<string, QueryTiming> = {};
  // The dashboard's overview fires its three panels' calls at once (last 24 h, hourly points):
  // the figure is the time until all three answered. The stream's first page is the newest 50.
  const day = { end: new Date(Math.ceil(Date.now() / 60_000) * 60_000) };
  const range = `bucketSid=${b}&startDate=${new Date(day.end.getTime() - 86_400_000).toISOString()}&endDate=${day.end.toISOString()}`;
  const overview = [
    `/v1/accounts/${a}/metrics/shapeA/summary?${range}`,
    `/v1/accounts/${a}/metrics/shapeA/throughput?${range}&interval=hour&averageUnits=rpm`,
    `/v1/accounts/${a}/metrics/shapeA/responseTime?${range}&interval=hour`,
  ];
  out.dashboardOverview = await timeCalls(target, 'dashboardOverview', overview, calls);
  out.dashboardStreamFirstPage = await timeCalls(
    target,
    'dashboardStreamFirstPage',
    [`/v1/accounts/${a}/buckets/${b}/requests?sort=createdAt&order=desc&limit=50`],
    calls,
  );
  Object.assign(
    out,
    await timeReleaseAndSlos(
      (method, p, body) => call(target, method, p, body),
      a,
      b,
      target.pid,
      calls,
      log,
    ),
  );
  for (const [name, p] of Object.entries(paths)) {
    const first = await call(target, 'GET', p).catch(() => ({ status: 0, body: undefined }));
    if (first.status !== 200) {
      out[name] = {
        path: p,
        status: first.status,
        medianMs: null,
        p95Ms: null,
        note: 'n/a (endpoint absent or failing)',
      };
      log(`query ${name}: n/a (status ${first.status})`);
      continue;
    }
    // A few unmeasured calls first: caches and JIT, as a dashboard that is already open.
    for (let i = 0; i < 2; i++) await call(target, 'GET', p);
    const ms: number[] = [];
    for (let i = 0; i < calls; i++) {
      const t = performance.now();
      const r = await call(target, 'GET', p);
      ms.push(performance.now() - t);
      if (r.status !== 200) throw new Error(`${name} answered ${r.status}`);
    }
    ms.sort((x, y) => x - y);
    out[name] = {
      path: p,
      status: 200,
      medianMs: round(quantile(ms, 0.5)),
      p95Ms: round(quantile(ms, 0.95)),
    };
    log(`query ${name}: median ${out[name]!.medianMs} ms, p95 ${out[name]!.p95Ms} ms`);
  }
  return out;
}

/** Median and p95 of `calls` rounds of `paths` requested concurrently (a round ends with the last answer). */
async function timeCalls(target: Target, name: string, paths: string[], calls: number): Promise<QueryTiming> {
  const once = () => Promise.all(paths.map((p) => call(target, 'GET', p)));
  const first = await once().catch(() => []);
  const failed = first.find((r) => r.status !== 200);
  if (!first.length || failed) {
    log(`query ${name}: n/a (status ${failed?.status ?? 0})`);
    return { path: paths.join(' + '), status: failed?.status ?? 0, medianMs: null, p95Ms: null, note: 'n/a' };
  }
  for (let i = 0; i < 2; i++) await once();
  const ms: number[] = [];
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    const rs = await once();
    ms.push(performance.now() - t);
    const bad = rs.find((r) => r.status !== 200);
    if (bad) throw new Error(`${name} answered ${bad.status}`);
  }
  ms.sort((x, y) => x - y);
  const t = {
    path: paths.join(' + '),
    status: 200,
    medianMs: round(quantile(ms, 0.5)),
    p95Ms: round(quantile(ms, 0.95)),
  };
  log(`query ${name}: median ${t.medianMs} ms, p95 ${t.p95Ms} ms`);
  return t;
}

function commit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim();
  } catch {
    return 'unknown';
  }
}

async function main(): Promise<void> {
  const result: Record<string, unknown> = {
    startedAt: new Date().toISOString(),
    commit: commit(),
    machine: {
      cpus: os.cpus().length,
      memoryBytes: os.totalmem(),
      node: process.version,
      loadAverageStart: loadAverage(),
    },
    options: opt,
  };
  const figures: Record<string, unknown> = {};
  let service: ServiceHandle | undefined;
  const extraProcessors: Awaited<ReturnType<typeof startRoleProcess>>[] = [];
  let target: Target;
  const profileDir = path.join(dataDir, 'profile');

  if (opt['use-running']) {
    for (const k of ['api', 'ingest', 'token', 'account'] as const)
      if (!opt[k]) throw new Error(`--use-running needs --${k}`);
    target = {
      api: opt.api!,
      ingest: opt.ingest!,
      token: opt.token!,
      account: opt.account!,
      buckets: opt.bucket ?? [],
      kafka: opt.kafka?.split(','),
      pid: opt.pid ? Number(opt.pid) : undefined,
    };
    if (only.has('query')) {
      log('--use-running: the 1M/10M query sets need the service stopped; query phase skipped');
      only.delete('query');
    }
  } else {
    fs.mkdirSync(dataDir, { recursive: true });
    if (opt['service-dist']) log(`service from ${opt['service-dist']} (no build)`);
    else {
      log('npm run build');
      await build(log);
    }
    const env: Record<string, string> = {
      PORT: String(await freePort()),
      INGEST_PORT: String(await freePort()),
      KAFKA_PORT: String(await freePort()),
      KAFKA_CONTROLLER_PORT: String(await freePort()),
      PG_PORT: String(await freePort()),
      DATA_DIR: dataDir,
      LOG_LEVEL: String(opt['service-log-level']),
      // The bench polls and queries the management API far more than an hour's standard plan allows.
      RATE_LIMIT_STANDARD: '1000000000',
      // The load phases send far more ingest calls per minute than the per-token and per-bucket
      // limits allow one client (docs/security.md "Limits").
      INGEST_RATE_LIMIT_TOKEN: '1000000000',
      INGEST_RATE_LIMIT_BUCKET: '1000000000',
      // A known port in server mode: the bench reads the server's insert counters over HTTP.
      ...(chServer ? { CLICKHOUSE_MODE: 'server', CLICKHOUSE_HTTP_PORT: String(await freePort()) } : {}),
      ...(processors > 1 ? { KAFKA_REQUESTS_PARTITIONS: String(processors) } : {}),
      ...serviceEnv,
    };
    // Runtime flags for the service only (e.g. --max-semi-space-size=64), not for the generators.
    if (opt['service-node-options']) env.NODE_OPTIONS = opt['service-node-options'];
    log(
      `starting the service (DATA_DIR ${path.relative(ROOT, dataDir)})${opt.profile ? ' with --cpu-prof' : ''}`,
    );
    if (kept)
      log(
        `reusing the stack in ${dataDir} (account ${kept.account}, ${kept.largeLoaded ?? 0} records loaded)`,
      );
    service = await startService({
      env,
      logFile: path.join(dataDir, 'service.log'),
      // A reused directory has its demo account already; its token is in bench-kept.json.
      expectDemo: !kept,
      dist: opt['service-dist'],
      cpuProfDir: opt.profile ? profileDir : undefined,
    });
    if (chServer) chServerUrl = `http://127.0.0.1:${env.CLICKHOUSE_HTTP_PORT}`;
    for (let i = 2; i <= processors; i++) {
      // The service's local stack: its broker, its Postgres (password in its data folder) and its
      // ClickHouse server, as a deployment's KAFKA_BROKERS, DATABASE_URL and CLICKHOUSE_URL.
      const pw = fs.readFileSync(path.join(dataDir, 'postgres', 'pg-password'), 'utf8').trim();
      const procDir = path.join(dataDir, `processor-${i}`);
      fs.mkdirSync(procDir, { recursive: true });
      log(`starting processor process ${i} of ${processors}`);
      const p = await startRoleProcess({
        env: {
          ...serviceEnv,
          ROLES: 'processor',
          DATA_DIR: procDir,
          PORT: String(await freePort()),
          INGEST_PORT: String(await freePort()),
          DEMO_ACCOUNT: 'false',
          KAFKA_BROKERS: service.kafkaBrokers.join(','),
          DATABASE_URL: `postgres://postgres:${encodeURIComponent(pw)}@127.0.0.1:${env.PG_PORT}/tapline`,
          CLICKHOUSE_URL: chServerUrl!,
          KAFKA_REQUESTS_PARTITIONS: String(processors),
        },
        logFile: path.join(dataDir, `processor-${i}.log`),
        dist: opt['service-dist'],
      });
      extraProcessors.push(p);
      extraProcessorPids.push(p.pid);
    }
    const demo = kept ?? {
      token: service.demo!.apiToken,
      account: service.demo!.accountSid,
      buckets: [service.demo!.bucketSid],
    };
    if (!kept) saveKept(demo);
    target = {
      api: service.apiUrl,
      ingest: service.ingestUrl,
      token: demo.token,
      account: demo.account,
      buckets: demo.buckets,
      kafka: service.kafkaBrokers,
      pid: service.pid,
    };
  }
  const stopService = async () => {
    if (!service) return;
    await Promise.all(extraProcessors.splice(0).map((p) => p.stop()));
    extraProcessorPids.length = 0;
    log('stopping the service');
    await service.stop();
    service = undefined;
  };
  process.on('SIGINT', () => {
    void stopService().finally(() => {
      if (!opt['keep-data'] && !opt.profile) fs.rmSync(dataDir, { recursive: true, force: true });
      process.exit(130);
    });
  });

  try {
    // At least four buckets, so Kafka keys (bucket sids) spread over the partitions. With several
    // processors, the same number of buckets on each partition (the ingest's key partitioner), so
    // that each processor gets an equal share: four random sids leave one of two partitions empty
    // one time in eight.
    const partitions = processors;
    const perPartition = Math.max(1, Math.ceil(4 / partitions));
    const onPartition = (sid: string) =>
      Partitioners.DefaultPartitioner()({
        topic: 'traffic.requests',
        partitionMetadata: Array.from({ length: partitions }, (_, i) => ({
          partitionErrorCode: 0,
          partitionId: i,
          leader: 0,
          replicas: [0],
          isr: [0],
        })),
        message: { key: sid, value: null },
      });
    const spread = () => {
      const by = Array.from({ length: partitions }, () => [] as string[]);
      for (const sid of target.buckets) by[onPartition(sid)]!.push(sid);
      return by;
    };
    while (
      target.buckets.length < 4 ||
      (partitions > 1 && spread().some((sids) => sids.length < perPartition))
    ) {
      if (target.buckets.length >= 64) throw new Error('no even spread of buckets over the partitions');
      const r = await call<{ sid: string }>(target, 'POST', `/v1/accounts/${target.account}/buckets`, {
        name: `bench-${target.buckets.length}-${stamp}`,
      });
      if (r.status !== 201) throw new Error(`bucket create answered ${r.status}`);
      target.buckets.push(r.body.sid);
    }
    if (partitions > 1) target.buckets = spread().flatMap((sids) => sids.slice(0, perPartition));
    const phases: PhaseResult[] = [];
    result.phases = phases;
    const batchConns = num('concurrency');

    if (opt['batch-redactions'] === 'none') {
      const removed = await deleteRedactions(target);
      log(`--batch-redactions none: deleted the account's ${removed} redaction rule(s)`);
    } else if (opt['batch-redactions'] !== 'account')
      throw new Error(`--batch-redactions is account or none, not ${opt['batch-redactions']}`);
    if (only.has('batch') || only.has('freshness')) {
      phases.push(
        await runPhase(target, 'warm-up', {
          mode: 'batch',
          records: 20_000,
          connections: batchConns,
          rate: 0,
        }),
      );
    }
    const batchRuns: PhaseResult[] = [];
    const consumerRuns: PhaseResult[] = [];
    if (only.has('batch')) {
      const consumers = num('batch-consumers');
      for (let i = 1; i <= num('runs'); i++) {
        const withConsumers = consumers > 0 && (opt['batch-consumers-runs'] === 'all' || i % 2 === 0);
        const r = await runPhase(
          target,
          `batch run ${i}${withConsumers ? ` (${consumers} consumers)` : ''}`,
          {
            mode: 'batch',
            records: num('records'),
            connections: batchConns,
            rate: num('rate'),
            ...(withConsumers ? { consumers } : {}),
          },
        );
        phases.push(r);
        (withConsumers ? consumerRuns : batchRuns).push(r);
      }
      const meanRate = (runs: PhaseResult[]) =>
        runs.reduce((sum, r) => sum + r.e2eRecordsPerSec, 0) / runs.length;
      const meanCpu = (runs: PhaseResult[]) =>
        runs.reduce((sum, r) => sum + (r.serviceCpuSecondsPer100k ?? NaN), 0) / runs.length;
      const bestOf = (runs: PhaseResult[]) =>
        runs.reduce((a, b) => (b.e2eRecordsPerSec > a.e2eRecordsPerSec ? b : a));
      const bestWith = consumerRuns.length ? bestOf(consumerRuns) : undefined;
      if (bestWith) {
        // The same load with a consumer on every record, alternated with the runs without (or
        // alone, `--batch-consumers-runs all`).
        Object.assign(figures, {
          e2eBatchConsumersRecordsPerSec: round(bestWith.e2eRecordsPerSec, 0),
          e2eBatchConsumersRecordsPerSecRuns: consumerRuns.map((r) => round(r.e2eRecordsPerSec, 0)),
          e2eBatchConsumersRecordsPerSecMean: round(meanRate(consumerRuns), 0),
          serviceCpuSecondsPer100kBatchConsumers: round(bestWith.serviceCpuSecondsPer100k ?? NaN, 2),
          serviceCpuSecondsPer100kBatchConsumersMean: round(meanCpu(consumerRuns), 2),
        });
      }
      if (batchRuns.length > 0) {
        const best = bestOf(batchRuns);
        if (bestWith) {
          Object.assign(figures, {
            e2eBatchConsumersRatio: round(bestWith.e2eRecordsPerSec / best.e2eRecordsPerSec, 3),
            // The runs alternate and spread by ~10 % on two shared cores: the ratio of the means too.
            e2eBatchConsumersRatioOfMeans: round(meanRate(consumerRuns) / meanRate(batchRuns), 3),
          });
        }
        Object.assign(figures, {
          e2eBatchRecordsPerSecMean: round(meanRate(batchRuns), 0),
          serviceCpuSecondsPer100kBatchMean: round(meanCpu(batchRuns), 2),
          e2eBatchRecordsPerSec: round(best.e2eRecordsPerSec, 0),
          e2eBatchRecordsPerSecRuns: batchRuns.map((r) => round(r.e2eRecordsPerSec, 0)),
          ingestBatchRecordsPerSec: round(best.ingestRecordsPerSec, 0),
          ingestLatencyBatchP50Ms: round(best.ackLatencyP50Ms),
          ingestLatencyBatchP99Ms: round(best.ackLatencyP99Ms),
          serviceCpuSecondsPer100kBatch: round(best.serviceCpuSecondsPer100k ?? NaN, 2),
          ingestProcessCpuSecondsPer100kBatch: round(best.ingestProcessCpuSecondsPer100k ?? NaN, 2),
          brokerCpuSecondsPer100kBatch: round(best.brokerCpuSecondsPer100k ?? NaN, 2),
          ...(chServer
            ? {
                clickhouseServerCpuSecondsPer100kBatch: round(
                  best.clickhouseServerCpuSecondsPer100k ?? NaN,
                  2,
                ),
                recordsPerBlockBatch: round(best.recordsPerBlock ?? NaN, 0),
                processors,
              }
            : {}),
        });
      }
    }
    if (only.has('single')) {
      const r = await runPhase(target, 'one record per request', {
        mode: 'single',
        records: num('single-records'),
        connections: num('single-concurrency'),
        rate: 0,
      });
      phases.push(r);
      Object.assign(figures, {
        e2eSingleRecordsPerSec: round(r.e2eRecordsPerSec, 0),
        ingestSingleRecordsPerSec: round(r.ingestRecordsPerSec, 0),
        ingestLatencySingleP50Ms: round(r.ackLatencyP50Ms),
        ingestLatencySingleP99Ms: round(r.ackLatencyP99Ms),
        serviceCpuSecondsPer100kSingle: round(r.serviceCpuSecondsPer100k ?? NaN, 2),
        ingestProcessCpuSecondsPer100kSingle: round(r.ingestProcessCpuSecondsPer100k ?? NaN, 2),
      });
    }
    if (only.has('sdk')) {
      // The Node.js SDK (sdk/node, docs/sdk.md): a host with the SDK batching to the real ingest.
      const { runSdkPhase } = await import('./sdk-phase.js');
      const r = await runSdkPhase(
        {
          ingest: target.ingest,
          api: target.api,
          token: target.token,
          account: target.account,
          bucket: target.buckets[0]!,
        },
        {
          requests: num('sdk-requests'),
          connections: num('sdk-connections'),
          directRecords: num('sdk-direct-records'),
          log,
        },
      );
      result.sdk = r;
      Object.assign(figures, {
        sdkHostRequestsPerSec: round(r.hostRequestsPerSec, 0),
        sdkDeliveredRecordsPerSec: round(r.deliveredRecordsPerSec, 0),
        e2eSdkRecordsPerSec: round(r.e2eRecordsPerSec ?? NaN, 0),
        sdkDroppedRecords: r.sdk.dropped,
        sdkDirectDeliveredRecordsPerSec: round(r.direct?.deliveredRecordsPerSec ?? NaN, 0),
        e2eSdkDirectRecordsPerSec: round(r.direct?.e2eRecordsPerSec ?? NaN, 0),
      });
    }
    if (only.has('otlp')) {
      // OTLP/HTTP trace ingest (test/bench/otlp.ts, docs/opentelemetry.md): spans/s per encoding.
      const { runOtlpBench } = await import('./otlp.js');
      const [bucket] = target.buckets;
      const otlp = await runOtlpBench(
        {
          ingest: target.ingest,
          api: target.api,
          token: target.token,
          account: target.account,
          bucket: bucket!,
        },
        { spans: 102_400, spansPerExport: 512, concurrency: 8, encodings: ['protobuf', 'json'], log },
      );
      for (const r of otlp) {
        figures[`otlp_${r.encoding}_spansPerSec`] = round(r.spansPerSecond, 0);
        figures[`otlp_${r.encoding}_storedHttpSpansPerSec`] = round(r.storedHttpSpansPerSecond ?? NaN, 0);
      }
    }
    if (only.has('shapea')) {
      // Shape A redaction cost (test/bench/shape-a.ts, docs/sensitive-data.md): the ten predefined
      // types on all scopes against no rules, in process and end to end, in the same run.
      const { shapeAPhase } = await import('./shape-a.js');
      const r = await shapeAPhase(
        {
          api: target.api,
          ingest: target.ingest,
          token: target.token,
          account: target.account,
          pid: target.pid,
        },
        {
          records: num('shapea-records'),
          rounds: num('shapea-rounds'),
          inProcessRecords: 4000,
          batch: num('batch'),
          connections: 16,
          generators: 1,
          environments: ENVIRONMENTS,
          log,
        },
      );
      result.shapeA = r;
      Object.assign(figures, {
        shapeAAddedUsPerRecordInProcess: r.inProcess.addedUsPerRecord,
        shapeAAddedMainCpuUsPerRecord: r.e2e.addedMainCpuUsPerRecord,
        e2eNoRulesRecordsPerSec: round(r.e2e.noRulesRecordsPerSec, 0),
        e2eShapeARecordsPerSec: round(r.e2e.shapeARecordsPerSec, 0),
        shapeAThroughputDrop: r.e2e.throughputDrop,
        shapeAThroughputDropRatioToLimit: round(r.e2e.throughputDrop / r.limits.throughputDrop, 2),
        shapeAAddedCpuRatioToLimit: round(r.inProcess.addedUsPerRecord / r.limits.addedCpuUsPerRecord, 2),
      });
    }
    if (opt.profile && service && phases.length > 0) {
      const records = phases.reduce((s, r) => s + r.acked, 0);
      await stopService();
      // One profile per process (the core and each ingest worker), largest first.
      const files = fs
        .readdirSync(profileDir)
        .filter((f) => f.endsWith('.cpuprofile'))
        .map((f) => path.join(profileDir, f))
        .sort((x, y) => fs.statSync(y).size - fs.statSync(x).size);
      const summaries: (ProfileSummary & { file: string; records: number })[] = [];
      for (const file of files.slice(0, 2)) {
        const summary: ProfileSummary = summarise(file, records, 30);
        log(`profile ${path.relative(ROOT, file)}`);
        printSummary(summary, records);
        summaries.push({ ...summary, file: path.relative(ROOT, file), records });
      }
      if (summaries[0]) result.profile = summaries[0];
      result.profiles = summaries;
      only.clear();
    }
    if (only.has('freshness')) {
      const max =
        num('freshness-max') > 0
          ? num('freshness-max')
          : batchRuns.length
            ? Math.max(...batchRuns.map((r) => r.e2eRecordsPerSec))
            : phases[0]!.e2eRecordsPerSec;
      // Half the maximum (the processor's fetches fill and its hold joins them) and a tenth (the
      // live tail: fetches answered when their wait runs out).
      for (const share of [0.5, 0.1]) {
        const rate = Math.round(max * share);
        const r = await runPhase(target, `freshness at ${share * 100}% of max`, {
          mode: 'batch',
          records: rate * num('freshness-seconds'),
          connections: batchConns,
          rate,
        });
        phases.push(r);
        if (share === 0.5)
          Object.assign(figures, {
            freshnessRateRecordsPerSec: rate,
            freshnessP50Ms: r.freshnessP50Ms,
            freshnessP99Ms: r.freshnessP99Ms,
            freshnessMaxMs: r.freshnessMaxMs,
            ingestLatencyAtHalfRateP50Ms: round(r.ackLatencyP50Ms),
            ingestLatencyAtHalfRateP99Ms: round(r.ackLatencyP99Ms),
          });
        else
          Object.assign(figures, {
            freshnessTenthRateRecordsPerSec: rate,
            freshnessTenthP50Ms: r.freshnessP50Ms,
            freshnessTenthP99Ms: r.freshnessP99Ms,
            freshnessTenthMaxMs: r.freshnessMaxMs,
          });
      }
    }
    if (only.has('limits')) {
      if (target.pid) {
        const waited = await stackQuiet(target.pid);
        log(`limits: the stack went quiet after ${waited.toFixed(0)} s (its merges after the load phases)`);
      }
      log(
        `limit (a): raw ClickHouse insert (toRow + RequestsWriter.insert, ${chServer ? 'own ClickHouse server, CPU of both processes' : 'own chDB directory'})`,
      );
      const chDir = path.join(dataDir, 'ch-limit');
      const ch = await child<ChLimitConfig, ChLimitResult>('ch-limit.ts', {
        dir: chDir,
        records: num('limit-records'),
        block: 20_000,
        poolRecords: 20_000,
        environments: ENVIRONMENTS,
        seed: 42,
        server: chServer,
      });
      fs.rmSync(chDir, { recursive: true, force: true });
      log(
        `limit (a): ${Math.round(ch.rate)} records/s (map ${ch.mapSeconds.toFixed(1)} s, insert ${ch.insertSeconds.toFixed(1)} s)`,
      );
      let kafka: KafkaLimitResult | undefined;
      let kafkaGzip: KafkaLimitResult | undefined;
      let kafkaPlatformatic: KafkaLimitResult | undefined;
      if (target.kafka) {
        log('limit (b): raw Kafka produce→consume (kafkajs, bench topic)');
        // The same payloads, sends and acks for each variant; each on a topic of its own.
        const brokers = target.kafka;
        const limitB = (name: string, extra: Partial<KafkaLimitConfig> = {}) =>
          child<KafkaLimitConfig, KafkaLimitResult>('kafka-limit.ts', {
            brokers,
            topic: `bench.${name}.${stamp}`,
            partitions: 4,
            records: num('limit-records') * 2,
            batch: num('batch'),
            messagesPerSend: 10,
            inflight: 4,
            poolRecords: 20_000,
            environments: ENVIRONMENTS,
            seed: 43,
            ...extra,
          });
        kafka = await limitB('limit');
        log(`limit (b): ${Math.round(kafka.rate)} records/s (produce only ${Math.round(kafka.produceRate)})`);
        // The same with gzip (level 1) for comparison: smaller batches to checksum, zlib off the main thread.
        kafkaGzip = await limitB('limit-gzip', { compression: 'gzip', gzipLevel: 1 });
        log(`limit (b) with gzip level 1: ${Math.round(kafkaGzip.rate)} records/s`);
        // The maintained pure-JS alternative to kafkajs, same payloads and sends (issue #6: compare
        // before switching).
        kafkaPlatformatic = await limitB('limit-plt', { client: 'platformatic' }).catch((err: Error) => {
          log(`limit (b) with @platformatic/kafka failed: ${err.message}`);
          return undefined;
        });
        if (kafkaPlatformatic)
          log(`limit (b) with @platformatic/kafka: ${Math.round(kafkaPlatformatic.rate)} records/s`);
      }
      const lower = Math.min(ch.rate, kafka?.rate ?? Infinity);
      const httpFloor = await limitHttp(target);
      result.limits = {
        clickhouse: ch,
        kafka: kafka ?? 'n/a (no --kafka brokers)',
        kafkaGzip,
        kafkaPlatformatic,
        httpFloor,
      };
      Object.assign(figures, {
        limitClickHouseRecordsPerSec: round(ch.rate, 0),
        limitClickHouseCpuSecondsPer100k: round(ch.cpuSecondsPer100k, 2),
        limitKafkaRecordsPerSec: kafka ? round(kafka.rate, 0) : null,
        limitKafkaCpuSecondsPer100k: kafka ? round(kafka.cpuSecondsPer100k, 2) : null,
        limitKafkaGzipRecordsPerSec: kafkaGzip ? round(kafkaGzip.rate, 0) : null,
        limitKafkaGzipCpuSecondsPer100k: kafkaGzip ? round(kafkaGzip.cpuSecondsPer100k, 2) : null,
        limitKafkaPlatformaticRecordsPerSec: kafkaPlatformatic ? round(kafkaPlatformatic.rate, 0) : null,
        limitKafkaPlatformaticCpuSecondsPer100k: kafkaPlatformatic
          ? round(kafkaPlatformatic.cpuSecondsPer100k, 2)
          : null,
        limitHttpBatchRecordsPerSec: round(httpFloor.batch.rate, 0),
        limitHttpBatchCpuSecondsPer100k: round(httpFloor.batch.cpuSecondsPer100k, 2),
        limitHttpSingleRecordsPerSec: round(httpFloor.single.rate, 0),
        limitHttpSingleCpuSecondsPer100k: round(httpFloor.single.cpuSecondsPer100k, 2),
        // The highest rate the parts allow together on this machine's cores if Tapline's own work
        // cost nothing: cores ÷ (CPU per record of the HTTP floor server and its load generators +
        // the Kafka limit + the ClickHouse limit).
        partsCeilingBatchRecordsPerSec: kafka ? round(ceiling(httpFloor.batch, kafka, ch), 0) : null,
        partsCeilingSingleRecordsPerSec: kafka ? round(ceiling(httpFloor.single, kafka, ch), 0) : null,
        e2eSingleShareOfHttpLimit:
          typeof figures.e2eSingleRecordsPerSec === 'number'
            ? round(figures.e2eSingleRecordsPerSec / httpFloor.single.rate, 2)
            : null,
        e2eBatchShareOfLowerLimit:
          typeof figures.e2eBatchRecordsPerSec === 'number'
            ? round(figures.e2eBatchRecordsPerSec / lower, 2)
            : null,
      });
    }
    if (target.pid && (service || opt['use-running'])) {
      const svc = memory(target.pid);
      const brokerPid = descendants(target.pid, 'java')[0];
      const ingestPids = descendants(target.pid, 'node');
      Object.assign(figures, {
        servicePeakRssBytes: svc.peakRss,
        // npm start runs the ingest listener as a child process (services/ingest/ingest.process.ts)
        // the largest ingest worker's, and their count
        ingestProcessPeakRssBytes: ingestPids.length
          ? Math.max(...ingestPids.map((p) => memory(p).peakRss))
          : null,
        ingestProcesses: ingestPids.length,
        brokerPeakRssBytes: brokerPid ? memory(brokerPid).peakRss : null,
      });
    }
    if (only.has('query') && service) {
      // A reused directory keeps its large-set bucket and what was loaded into it.
      const r = kept?.largeBucket
        ? { body: { sid: kept.largeBucket } }
        : await call<{ sid: string }>(target, 'POST', `/v1/accounts/${target.account}/buckets`, {
            name: `bench-large-${stamp}`,
          });
      target.largeBucket = r.body.sid;
      const queries: Record<string, unknown> = {};
      const sets = String(opt.sets)
        .split(',')
        .map(Number)
        .filter((n) => n > 0 && !(opt['skip-large'] && n > 1_000_000))
        .sort((x, y) => x - y);
      let loaded = kept?.largeLoaded ?? 0;
      for (const wanted of sets) {
        // A reused directory's bucket may hold this set already (or more): it is timed as it is.
        const size = Math.max(wanted, loaded);
        let load: LargeSetResult | { reused: number } = { reused: loaded };
        if (wanted > loaded) {
          const env = service.env;
          // Embedded: the chDB directory is opened by one process at a time, so the service stops for
          // the load. Server mode: the statement goes to the service's ClickHouse server over HTTP
          // while the service runs.
          const serverPid = chServer ? descendants(service.pid, CH_SERVER_COMM)[0] : undefined;
          if (chServer && serverPid === undefined)
            throw new Error('no ClickHouse server process under the service');
          if (!chServer) await stopService();
          log(
            `loading ${size - loaded} records DIRECTLY into ClickHouse (INSERT … SELECT FROM numbers${chServer ? ' over HTTP to the server' : ''}; no ingest, no Kafka)`,
          );
          load = await child<LargeSetConfig, LargeSetResult>('large-set.ts', {
            path: path.join(dataDir, 'chdb'),
            url: serverPid === undefined ? undefined : clickhouseServerUrl(serverPid),
            accountSid: target.account,
            bucketSid: target.largeBucket,
            from: loaded,
            rows: size - loaded,
            days: num('large-days'),
            environments: ENVIRONMENTS,
          });
          loaded = size;
          saveKept({ ...(kept ?? demoOf(target)), largeBucket: target.largeBucket, largeLoaded: loaded });
          log(
            `loaded in ${load.seconds.toFixed(0)} s (${Math.round(load.rate)} rows/s), bucket holds ${load.totalRows}; merges settled in ${load.settleSeconds.toFixed(0)} s (${load.activeParts} -> ${load.settledParts} active parts)`,
          );
          if (!chServer) {
            service = await startService({
              env,
              logFile: path.join(dataDir, 'service.log'),
              expectDemo: false,
              dist: opt['service-dist'],
              // With --profile and the query phase alone, the restarted service's CPU profile covers the queries.
              cpuProfDir: opt.profile && phases.length === 0 ? profileDir : undefined,
            });
            target.pid = service.pid;
          }
        } else log(`the bucket holds ${loaded} records already (--data-dir): no load`);
        const label = size >= 1_000_000 ? `${size / 1_000_000}M` : `${size / 1000}k`;
        queries[label] = { loadedDirectly: true, load, endpoints: await timeQueries(target, 50) };
        if (num('range-rounds') > 0) {
          const ranges = await timeRangeQueries(
            (method, p, body) => call(target, method, p, body),
            target.account,
            target.largeBucket,
            RANGE_SUBJECT,
            num('range-rounds'),
            log,
          );
          Object.assign(queries[label] as object, { ranges });
          rangeTables.push(rangeTable(`${label} over ${num('large-days')} d`, ranges));
        }
      }
      result.queries = queries;
      if (target.pid) {
        // The stack's memory through the query set: each process's peak (VmHWM) since the service
        // last started (after a load, the service restarts before the queries). Their sum bounds
        // what the stack held at once. Postgres counts its postmaster only: its workers share
        // the postmaster's shared buffers, which each one's RSS would count again.
        const peak = (pids: number[]) => pids.reduce((sum, p) => sum + (memory(p).peakRss || 0), 0);
        const byProcess = {
          service: peak([target.pid]),
          ingest: peak(descendants(target.pid, 'node')),
          broker: peak(descendants(target.pid, 'java')),
          postgres: peak(
            descendants(target.pid, 'postgres')
              .sort((x, y) => x - y)
              .slice(0, 1),
          ),
          clickhouseServer: peak(descendants(target.pid, CH_SERVER_COMM)),
        };
        const total = Object.values(byProcess).reduce((x, y) => x + y, 0);
        for (const [k, v] of Object.entries(byProcess))
          figures[`queryPeakRss${k[0]!.toUpperCase()}${k.slice(1)}Bytes`] = v;
        figures.queryPeakRssTotalBytes = total;
        log(
          `peak RSS through the queries, MiB: ${Object.entries(byProcess)
            .map(([k, v]) => `${k} ${Math.round(v / 1048576)}`)
            .join(', ')}; total ${Math.round(total / 1048576)}`,
        );
      }
      figures.query = Object.fromEntries(
        Object.entries(queries).map(([k, v]) => [
          k,
          Object.fromEntries(
            Object.entries((v as { endpoints: Record<string, QueryTiming> }).endpoints).map(([n, t]) => [
              n,
              { medianMs: t.medianMs, p95Ms: t.p95Ms },
            ]),
          ),
        ]),
      );
    }
    if (only.has('dashboard')) {
      // Bundle size of the dashboard's first load and a 1,500 × 6 chart draw in Chromium.
      const page = await measureDashboardPage();
      result.dashboard = page;
      figures.dashboardInitialGzipBytes = page.gzipBytes;
      figures.dashboardInitialBrotliBytes = page.brotliBytes;
      figures.dashboardChartDrawMs = [page.chart.medianMs, page.chart.p95Ms];
      log(
        `dashboard: initial JS+CSS ${page.gzipBytes} B gzip, ${page.brotliBytes} B br; chart draw ${page.chart.medianMs} / ${page.chart.p95Ms} ms`,
      );
    }
  } catch (err) {
    // A failed phase still leaves the figures measured so far in the JSON.
    result.error = (err as Error).stack ?? String(err);
    console.error(result.error);
    process.exitCode = 1;
  } finally {
    await stopService();
    if (!opt['keep-data'] && !opt.profile && fs.existsSync(dataDir))
      fs.rmSync(dataDir, { recursive: true, force: true });
  }

  (result.machine as Record<string, unknown>).loadAverageEnd = loadAverage();
  result.figures = figures;
  result.finishedAt = new Date().toISOString();
  const out = opt.json ?? path.join(ROOT, 'bench', 'results', `${stamp}.json`);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify(result, null, 2));
  printTable(figures, result);
  for (const t of rangeTables) console.log(`\n${t}`);
  console.log(`\nresults: ${path.relative(process.cwd(), out)}`);
}

const TARGETS: Record<string, string> = {
  dashboardInitialGzipBytes: '≤ 250 KB',
  dashboardChartDrawMs: 'median / p95 ≤ 50',
  e2eBatchRecordsPerSec: '≥ 50,000',
  e2eSingleRecordsPerSec: '≥ 15,000',
  freshnessP99Ms: '≤ 1,000',
  freshnessTenthP99Ms: '≤ 300',
  servicePeakRssBytes: '≤ 1.5 GiB',
  queryPeakRssTotalBytes: '≤ 2 GiB',
  e2eBatchShareOfLowerLimit: '≥ 0.5',
};

function printTable(figures: Record<string, unknown>, result: Record<string, unknown>): void {
  const m = result.machine as { loadAverageStart: number[]; loadAverageEnd: number[]; cpus: number };
  console.log(
    `\nTapline bench — commit ${String(result.commit)}, ${m.cpus} cores, load average start ${m.loadAverageStart.join(' ')} end ${m.loadAverageEnd.join(' ')}`,
  );
  const rows: [string, string, string][] = [];
  const fmt = (v: unknown): string =>
    v === null || v === undefined
      ? 'n/a'
      : Array.isArray(v)
        ? v.map(fmt).join(' / ')
        : typeof v === 'number'
          ? v.toLocaleString('en-US')
          : String(v);
  for (const [k, v] of Object.entries(figures)) {
    if (k === 'query') continue;
    const shown =
      k.endsWith('Bytes') && typeof v === 'number'
        ? k.startsWith('dashboard')
          ? `${(v / 1024).toFixed(1)} KB`
          : `${(v / 2 ** 20).toFixed(0)} MiB`
        : fmt(v);
    rows.push([k, shown, TARGETS[k] ?? '']);
  }
  const q = figures.query as
    Record<string, Record<string, { medianMs: number | null; p95Ms: number | null }>> | undefined;
  if (q) {
    for (const [set, eps] of Object.entries(q))
      for (const [name, t] of Object.entries(eps))
        rows.push([
          `query ${set} ${name} median / p95 ms`,
          `${fmt(t.medianMs)} / ${fmt(t.p95Ms)}`,
          set !== '10M'
            ? ''
            : name === 'dashboardOverview'
              ? 'p95 ≤ 500'
              : name === 'dashboardStreamFirstPage'
                ? 'p95 ≤ 300'
                : name.startsWith('metrics')
                  ? 'p95 ≤ 50'
                  : '',
        ]);
    console.log('(query sets loaded DIRECTLY into ClickHouse with INSERT … SELECT, not through ingest)');
  }
  const w = Math.max(...rows.map((r) => r[0].length));
  const w2 = Math.max(...rows.map((r) => r[1].length));
  console.log(`${'figure'.padEnd(w)}  ${'value'.padStart(w2)}  target`);
  for (const [k, v, t] of rows) console.log(`${k.padEnd(w)}  ${v.padStart(w2)}  ${t}`);
}

/**
 * The consumers phase: test/bench/consumers.ts in a process of its own (it opens its own chDB
 * directory, never the service's), loading the set at the first run and timing the queries.
 */
function consumersPhase(): void {
  const records = String(num('consumer-records'));
  const dir = path.resolve(opt['consumer-dir'] ?? path.join(ROOT, '.cache', `consumers-${records}`));
  fs.mkdirSync(dir, { recursive: true });
  log(
    `consumers: ${records} records, ${opt['consumer-count']} consumers over ${opt['consumer-days']} d in ${dir}`,
  );
  execFileSync(
    path.join(ROOT, 'node_modules', '.bin', 'tsx'),
    [
      path.join(ROOT, 'test', 'bench', 'consumers.ts'),
      records,
      `--consumers=${num('consumer-count')}`,
      `--days=${num('consumer-days')}`,
      `--runs=${num('consumer-runs')}`,
      '--only=query',
      `--dir=${dir}`,
      '--keep',
    ],
    { stdio: 'inherit', cwd: ROOT },
  );
}

if (only.has('consumers')) {
  consumersPhase();
  only.delete('consumers');
  if (only.size === 0) process.exit(0);
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});

/** The service's CPU: its process, its Node children (ingest) and, in server mode, the ClickHouse server. */
function serviceCpuSeconds(pid: number): number {
  const pids = [pid, ...descendants(pid, 'node'), ...descendants(pid, CH_SERVER_COMM), ...extraProcessorPids];
  return pids.reduce((sum, p) => sum + cpuSeconds(p), 0);
}

/**
 * Waits, at most 60 s, until the service (with its ingest workers and a ClickHouse server) uses
 * under 5 % of a core for 3 s in a row, so that the limits measure cores the stack has let go of
 * (after the load phases it still merges what they stored), as the parts' ceiling assumes.
 * Returns the seconds waited.
 */
async function stackQuiet(pid: number): Promise<number> {
  const start = performance.now();
  let calm = 0;
  let last = serviceCpuSeconds(pid);
  while (calm < 3 && performance.now() - start < 60_000) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = serviceCpuSeconds(pid);
    calm = now - last < 0.05 ? calm + 1 : 0;
    last = now;
  }
  return (performance.now() - start) / 1000;
}
