/**
 * Shape A redaction's cost (issue 15's limits: processor CPU per record at most +30 µs, end-to-end
 * throughput at most 20% lower), measured in one run against no rules on the bench's records
 * (records.ts: 0.5–8 KB JSON bodies, a dozen headers, query strings):
 *
 * - processor path in process: what the processor does per record of a version 2 message —
 *   `JSON.parse` of its line, the processor's steps (PROCESSOR_STEPS), `toRow` of the text the sink
 *   stores (`encodeKept`: the line with the new fields, the new values written into it when the
 *   steps only replaced members of the parts, else the record serialised again) and the RowBinary encoding
 *   of the block — with no rules, then with a bucket holding every predefined type on all scopes;
 *   CPU µs per record, median of the rounds. Every round runs records of its own, generated as the
 *   load generator makes them, so no text repeats and the engine's caches are not flattered;
 * - end to end: the same load (load generators, batch ingest) sent alternately to a bucket without
 *   rules and to a bucket with those rules, in the same running service; records/s from the first
 *   send to the last stored record, and the service's main-process CPU (ingest listener, processor,
 *   API; not the ingest children or the broker) per record.
 *
 * `shapeAPhase(target, options)` runs against a running service (bench.ts can call it with its
 * target); standalone it builds, starts a fresh service as bench.ts does, runs, prints and stops:
 *
 *   npx tsx test/bench/shape-a.ts [--records 30000] [--rounds 3] [--in-process 4000] [--in-process-only]
 *     [--json out.json]
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import type * as CompiledRules from '../../services/processor/compiled-rules.js';
import type * as Pipeline from '../../services/processor/pipeline.js';
import type { StepContext, StoredRecord } from '../../services/processor/pipeline.js';
import type * as RowMapper from '../../services/processor/row.mapper.js';
import type * as Encoder from '../../services/processor/record-encoder.js';
import type { RequestRow } from '../../services/processor/row.mapper.js';
import type * as Snapshot from '../../services/processor/rule-snapshot.js';
import type { AccountRules } from '../../services/processor/rule-snapshot.js';
import type * as Steps from '../../services/processor/steps/index.js';
import { PREDEFINED_TYPES } from '../../services/processor/sensitive/index.js';
import { build, cpuSeconds, freePort, loadAverage, poll, ROOT, startService } from './bench-stack.js';
import type { LoadgenConfig, LoadgenResult } from './loadgen.js';
import { ingestRecord, rng } from './records.js';

/** The processor modules the in-process measurement runs. */
interface ProcessorModules {
  compileProcessorRules: typeof CompiledRules.compileProcessorRules;
  baseContext: typeof Pipeline.baseContext;
  runSteps: typeof Pipeline.runSteps;
  emptyRules: typeof Snapshot.emptyRules;
  toRow: typeof RowMapper.toRow;
  rowBinary: typeof RowMapper.rowBinary;
  encodeKept: typeof Encoder.encodeKept;
  rulesReadContent: typeof Encoder.rulesReadContent;
  PROCESSOR_STEPS: typeof Steps.PROCESSOR_STEPS;
}

/**
 * The processor's code as the service runs it: the compiled tree under `dist/` when it exists (as
 * `npm run build` leaves it), else the sources (through tsx, which adds a helper to every closure
 * and costs a few µs per record more).
 */
async function processorModules(): Promise<{ from: string; m: ProcessorModules }> {
  const dist = path.join(ROOT, 'dist', 'services', 'processor');
  const useDist = fs.existsSync(path.join(dist, 'steps', 'index.js'));
  const load = (rel: string) =>
    import(useDist ? pathToFileURL(path.join(dist, `${rel}.js`)).href : `../../services/processor/${rel}.js`);
  const [compiled, pipeline, snapshot, row, steps, encoder] = await Promise.all([
    load('compiled-rules'),
    load('pipeline'),
    load('rule-snapshot'),
    load('row.mapper'),
    load('steps/index'),
    load('record-encoder'),
  ]);
  return {
    from: useDist ? 'dist' : 'sources',
    m: {
      compileProcessorRules: compiled.compileProcessorRules,
      baseContext: pipeline.baseContext,
      runSteps: pipeline.runSteps,
      emptyRules: snapshot.emptyRules,
      toRow: row.toRow,
      rowBinary: row.rowBinary,
      encodeKept: encoder.encodeKept,
      rulesReadContent: encoder.rulesReadContent,
      PROCESSOR_STEPS: steps.PROCESSOR_STEPS,
    },
  };
}
export interface ShapeATarget {
  api: string;
  ingest: string;
  token: string;
  account: string;
  /** the service's main process: its CPU is read from /proc */
  pid?: number;
}

export interface ShapeAOptions {
  /** records per end-to-end run */
  records: number;
  /** end-to-end rounds; each sends to the plain bucket, then to the rules bucket */
  rounds: number;
  /** records of the in-process measurement */
  inProcessRecords: number;
  batch: number;
  connections: number;
  generators: number;
  environments: string[];
  log: (msg: string) => void;
}

export interface E2eRun {
  rules: 'none' | 'shapeA';
  records: number;
  e2eSeconds: number;
  e2eRecordsPerSec: number;
  /** CPU µs of the service's main process per record; null without a pid */
  mainCpuUsPerRecord: number | null;
}

export interface ShapeAResult {
  inProcess: {
    /** `dist` (the built service's code) or `sources` (through tsx) */
    code: string;
    records: number;
    noRulesUsPerRecord: number;
    shapeAUsPerRecord: number;
    addedUsPerRecord: number;
    /** share of the records the rules changed */
    redactedShare: number;
    /** part of `addedUsPerRecord` spent serialising the changed records again (toRow, RowBinary) */
    reserialiseUsPerRecord: number;
  };
  e2e: {
    runs: E2eRun[];
    noRulesRecordsPerSec: number;
    shapeARecordsPerSec: number;
    /** median over the rounds of 1 - shapeA / none (each round's two runs side by side) */
    throughputDrop: number;
    /** median over the rounds of shapeA minus none, main-process CPU per record; null without a pid */
    addedMainCpuUsPerRecord: number | null;
  };
  limits: { addedCpuUsPerRecord: 30; throughputDrop: 0.2 };
  loadAverage: number[];
}

/** Median; the mean of the middle two for an even count. */
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return NaN;
  const h = Math.floor(s.length / 2);
  return s.length % 2 ? s[h]! : (s[h - 1]! + s[h]!) / 2;
};

/** The ten predefined types (and `password`, eleven in all) on every scope. */
function shapeARules(m: ProcessorModules, accountSid: string): AccountRules {
  const r = m.emptyRules(accountSid, 'Bench');
  r.sensitiveRedactions = PREDEFINED_TYPES.map((type, i) => ({
    sid: `rdc_bench${i}`,
    accountSid,
    type,
    pattern: null,
    applyTo: null,
    level: 'full' as const,
    scopes: ['*' as const],
    buckets: null,
    environments: null,
  }));
  return r;
}

// ---------------------------------------------------------------------------------------------
// In process: the processor's per-record path

interface Line {
  text: string;
  buf: Buffer;
}

/** `n` records as the load generator makes them (records.ts), from their own seed. */
function lines(n: number, seed: number): Line[] {
  const r = rng(seed);
  const now = Date.now();
  return Array.from({ length: n }, (_, i) => {
    const rec = {
      ...ingestRecord(r, { environments: ['prod01', 'stag01', 'dev001'], now }),
      sid: `req_bench${String(seed).padStart(4, '0')}${String(i).padStart(18, '0')}`,
      receivedAt: new Date(now).toISOString(),
    };
    const text = JSON.stringify(rec);
    return { text, buf: Buffer.from(text) };
  });
}

/** Rows per RowBinary block, as the processor encodes a block's rows for one insert. */
const BLOCK_ROWS = 100;

/**
 * CPU µs per record of parse -> steps -> row -> RowBinary, median of the rounds after the first
 * (a warm-up). Each round runs its own records (`sets[round]`), so no round repeats the texts of
 * another: the engine's caches of clean texts see what they see end to end, where every record
 * differs (the load generator's pool is 20,000 records, longer than a run of `n`).
 */
function processorPath(
  m: ProcessorModules,
  sets: Line[][],
  ctx: StepContext,
  serialiseChanged = true,
): { us: number; changed: number } {
  const per: number[] = [];
  let changed = 0;
  for (let round = 0; round < sets.length; round++) {
    const input = sets[round]!;
    changed = 0;
    const rows: RequestRow[] = [];
    const checkLine = m.rulesReadContent(ctx.rules);
    const c0 = process.cpuUsage();
    for (const line of input) {
      const record = JSON.parse(line.text) as StoredRecord;
      const received = Object.assign({}, record);
      record.accountSid = ctx.accountSid;
      record.bucketSid = ctx.bucketSid;
      const res = m.runSteps(record, ctx, m.PROCESSOR_STEPS);
      if (res.kind !== 'ok') continue;
      // What the sink stores: the line (spliced where it can be) or the record serialised again.
      if (res.record.redacted === true) changed++;
      const text = serialiseChanged
        ? m.encodeKept({ line: line.buf, received }, res.record, checkLine)
        : line.buf;
      rows.push(m.toRow(res.record, 0, 0, text));
      if (rows.length === BLOCK_ROWS) m.rowBinary(rows.splice(0));
    }
    if (rows.length) m.rowBinary(rows);
    const used = process.cpuUsage(c0);
    if (round > 0) per.push((used.user + used.system) / input.length);
  }
  return { us: median(per), changed: changed / sets[sets.length - 1]!.length };
}

export async function measureInProcess(n: number, rounds = 5): Promise<ShapeAResult['inProcess']> {
  const { from, m } = await processorModules();
  const sets = Array.from({ length: rounds + 1 }, (_, i) => lines(n, 42 + i));
  const account = 'acc_bench';
  const bucket = 'bkt_bench';
  const none = processorPath(m, sets, m.baseContext(account, bucket));
  const ctx: StepContext = {
    accountSid: account,
    bucketSid: bucket,
    rules: m.compileProcessorRules(shapeARules(m, account)).forBucket(bucket),
  };
  const withRules = processorPath(m, sets, ctx);
  // The same with each changed record stored as its line (not what the processor does): the
  // difference is what writing the changed records again costs (spliced or serialised).
  const lineStored = processorPath(m, sets, ctx, false);
  return {
    code: from,
    records: n,
    noRulesUsPerRecord: Math.round(none.us * 10) / 10,
    shapeAUsPerRecord: Math.round(withRules.us * 10) / 10,
    addedUsPerRecord: Math.round((withRules.us - none.us) * 10) / 10,
    redactedShare: Math.round(withRules.changed * 1000) / 1000,
    reserialiseUsPerRecord: Math.round((withRules.us - lineStored.us) * 10) / 10,
  };
}

// ---------------------------------------------------------------------------------------------
// End to end, against a running service

async function call<T>(t: ShapeATarget, method: string, p: string, body?: unknown): Promise<T> {
  const res = await fetch(`${t.api}${p}`, {
    method,
    headers: { authorization: `Bearer ${t.token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${p} answered ${res.status}: ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

async function send(t: ShapeATarget, bucket: string, o: ShapeAOptions, seed: number) {
  const generators = Math.max(1, o.generators);
  const per = Math.ceil(o.records / generators);
  const kids = Array.from({ length: generators }, (_, g) => {
    const c = fork(path.join(import.meta.dirname, 'loadgen.ts'), [], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const cfg: LoadgenConfig = {
      mode: 'batch',
      ingestUrl: t.ingest,
      token: t.token,
      buckets: [bucket],
      environments: o.environments,
      records: per,
      batch: o.batch,
      connections: Math.max(1, Math.ceil(o.connections / generators)),
      rate: 0,
      poolRecords: Math.min(20_000, per),
      seed: seed + g * 7919,
    };
    const ready = new Promise<void>((resolve, reject) => {
      c.on('message', (m: { type: string }) => m.type === 'ready' && resolve());
      c.on('exit', (code) => code !== 0 && reject(new Error(`load generator exited ${code}`)));
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
  return {
    go: async () => {
      for (const k of kids) k.c.send({ type: 'go' });
      return Promise.all(kids.map((k) => k.done));
    },
  };
}

async function e2eRun(
  t: ShapeATarget,
  bucket: string,
  rules: E2eRun['rules'],
  o: ShapeAOptions,
  seed: number,
): Promise<E2eRun> {
  const load = await send(t, bucket, o, seed);
  const since = new Date().toISOString();
  const cpu0 = t.pid ? cpuSeconds(t.pid) : NaN;
  const tGo = Date.now();
  const results = await load.go();
  const acked = results.reduce((s, r) => s + r.ackedRecords, 0);
  let lastStoredAt = 0;
  await poll(
    async () => {
      const s = await call<{ stored: number; lastStoredAt: string | null }>(
        t,
        'GET',
        `/v1/accounts/${t.account}/pipeline/stats?bucketSid=${bucket}&startDate=${encodeURIComponent(since)}`,
      );
      lastStoredAt = s.lastStoredAt ? Date.parse(s.lastStoredAt) : 0;
      return s.stored >= acked;
    },
    { timeoutMs: 20 * 60_000, intervalMs: 250, what: `${rules}: every acknowledged record stored` },
  );
  const cpu1 = t.pid ? cpuSeconds(t.pid) : NaN;
  const e2eSeconds = (lastStoredAt - tGo) / 1000;
  const run: E2eRun = {
    rules,
    records: acked,
    e2eSeconds: Math.round(e2eSeconds * 100) / 100,
    e2eRecordsPerSec: Math.round(acked / e2eSeconds),
    mainCpuUsPerRecord: Number.isFinite(cpu1 - cpu0) ? Math.round(((cpu1 - cpu0) / acked) * 1e7) / 10 : null,
  };
  o.log(
    `shape A e2e (${rules}): ${run.e2eRecordsPerSec} records/s, main process ${run.mainCpuUsPerRecord ?? '?'} µs/record`,
  );
  return run;
}

/** Creates the rules bucket with every predefined type on `*` and waits until the processor applies them. */
async function rulesBucket(t: ShapeATarget, o: ShapeAOptions): Promise<{ plain: string; rules: string }> {
  const stamp = Date.now().toString(36);
  const plain = await call<{ sid: string }>(t, 'POST', `/v1/accounts/${t.account}/buckets`, {
    name: `shape-a-none-${stamp}`,
  });
  const withRules = await call<{ sid: string }>(t, 'POST', `/v1/accounts/${t.account}/buckets`, {
    name: `shape-a-rules-${stamp}`,
  });
  for (const type of PREDEFINED_TYPES)
    await call(t, 'POST', `/v1/accounts/${t.account}/redactions`, {
      type,
      level: 'full',
      scopes: ['*'],
      redactAt: 'server',
      buckets: [withRules.sid],
    });
  o.log(`shape A: ${PREDEFINED_TYPES.length} rules on bucket ${withRules.sid}; waiting for the processor`);
  await poll(
    async () => {
      const ctx = `probe-${Date.now()}`;
      const res = await fetch(`${t.ingest}/v1/buckets/${withRules.sid}/ingest`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          records: [
            {
              contextSid: ctx,
              environmentSid: o.environments[0],
              createdAt: new Date().toISOString(),
              request: {
                method: 'POST',
                path: '/probe',
                body: 'mail ops@example.org',
                contentType: 'text/plain',
              },
            },
          ],
        }),
      });
      if (res.status !== 202) throw new Error(`probe ingest answered ${res.status}`);
      const probe = await poll(
        async () => {
          const list = await call<{ records: { contextSid?: string; request: { body?: unknown } }[] }>(
            t,
            'GET',
            `/v1/accounts/${t.account}/buckets/${withRules.sid}/requests?limit=20`,
          );
          return list.records.find((r) => r.contextSid === ctx);
        },
        { timeoutMs: 30_000, intervalMs: 200, what: 'the probe stored' },
      );
      return probe.request.body === 'mail [REDACTED:email]';
    },
    { timeoutMs: 60_000, intervalMs: 500, what: 'the Shape A rules applied' },
  );
  return { plain: plain.sid, rules: withRules.sid };
}

export async function shapeAPhase(t: ShapeATarget, o: ShapeAOptions): Promise<ShapeAResult> {
  o.log(`shape A in process: ${o.inProcessRecords} records`);
  const inProcess = await measureInProcess(o.inProcessRecords);
  o.log(`shape A in process: ${JSON.stringify(inProcess)}`);
  const buckets = await rulesBucket(t, o);
  // Warm-up runs so the measured ones do not pay JIT and first-insert costs.
  await e2eRun(t, buckets.plain, 'none', { ...o, records: Math.min(o.records, 10_000) }, 1);
  await e2eRun(t, buckets.rules, 'shapeA', { ...o, records: Math.min(o.records, 10_000) }, 2);
  // Each round runs both buckets side by side, in alternating order (ABBA) so a drift of the
  // shared machine's load does not favour one side; the figures are medians of the rounds.
  const runs: E2eRun[] = [];
  const drops: number[] = [];
  const added: number[] = [];
  for (let i = 0; i < o.rounds; i++) {
    const order: E2eRun['rules'][] = i % 2 ? ['shapeA', 'none'] : ['none', 'shapeA'];
    const pair = new Map<E2eRun['rules'], E2eRun>();
    for (const rules of order) {
      const run = await e2eRun(t, rules === 'none' ? buckets.plain : buckets.rules, rules, o, 100 + i);
      pair.set(rules, run);
      runs.push(run);
    }
    const none = pair.get('none')!;
    const shapeA = pair.get('shapeA')!;
    drops.push(1 - shapeA.e2eRecordsPerSec / none.e2eRecordsPerSec);
    if (none.mainCpuUsPerRecord !== null && shapeA.mainCpuUsPerRecord !== null)
      added.push(shapeA.mainCpuUsPerRecord - none.mainCpuUsPerRecord);
  }
  const of = (r: E2eRun['rules']) => runs.filter((x) => x.rules === r).map((x) => x.e2eRecordsPerSec);
  return {
    inProcess,
    e2e: {
      runs,
      noRulesRecordsPerSec: median(of('none')),
      shapeARecordsPerSec: median(of('shapeA')),
      throughputDrop: Math.round(median(drops) * 1000) / 1000,
      addedMainCpuUsPerRecord: added.length ? Math.round(median(added) * 10) / 10 : null,
    },
    limits: { addedCpuUsPerRecord: 30, throughputDrop: 0.2 },
    loadAverage: loadAverage(),
  };
}

// ---------------------------------------------------------------------------------------------
// Standalone

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      records: { type: 'string', default: '30000' },
      rounds: { type: 'string', default: '3' },
      'in-process': { type: 'string', default: '4000' },
      'in-process-only': { type: 'boolean', default: false },
      batch: { type: 'string', default: '100' },
      connections: { type: 'string', default: '16' },
      generators: { type: 'string', default: '1' },
      json: { type: 'string' },
      'keep-data': { type: 'boolean', default: false },
    },
  });
  const t0 = Date.now();
  const log = (msg: string) =>
    process.stderr.write(`[shape-a ${((Date.now() - t0) / 1000).toFixed(0).padStart(4)}s] ${msg}\n`);
  const options: ShapeAOptions = {
    records: Number(values.records),
    rounds: Number(values.rounds),
    inProcessRecords: Number(values['in-process']),
    batch: Number(values.batch),
    connections: Number(values.connections),
    generators: Number(values.generators),
    environments: ['prod01', 'stag01', 'dev001'],
    log,
  };
  if (values['in-process-only']) {
    console.log(JSON.stringify({ inProcess: await measureInProcess(options.inProcessRecords) }, null, 2));
    return;
  }
  const dataDir = path.join(
    ROOT,
    '.cache',
    `bench-shape-a-${new Date().toISOString().replace(/[:.]/g, '-')}`,
  );
  fs.mkdirSync(dataDir, { recursive: true });
  log('npm run build');
  await build(log);
  const env: Record<string, string> = {
    PORT: String(await freePort()),
    INGEST_PORT: String(await freePort()),
    KAFKA_PORT: String(await freePort()),
    KAFKA_CONTROLLER_PORT: String(await freePort()),
    PG_PORT: String(await freePort()),
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_STANDARD: '1000000000',
    INGEST_RATE_LIMIT_TOKEN: '1000000000',
    INGEST_RATE_LIMIT_BUCKET: '1000000000',
  };
  log(`starting the service (DATA_DIR ${path.relative(ROOT, dataDir)})`);
  const service = await startService({ env, logFile: path.join(dataDir, 'service.log'), expectDemo: true });
  try {
    const demo = service.demo!;
    const result = await shapeAPhase(
      {
        api: service.apiUrl,
        ingest: service.ingestUrl,
        token: demo.apiToken,
        account: demo.accountSid,
        pid: service.pid,
      },
      options,
    );
    const out = JSON.stringify(result, null, 2);
    console.log(out);
    if (values.json) fs.writeFileSync(values.json, `${out}\n`);
  } finally {
    log('stopping the service');
    await service.stop();
    if (!values['keep-data']) fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  main().catch((err: Error) => {
    console.error(err);
    process.exit(1);
  });
}
