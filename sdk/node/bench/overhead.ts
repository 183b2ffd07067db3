/**
 * Overhead of the SDK in the host: a hello-world node:http server driven at a fixed rate
 * (default 5,000 requests/s, open loop) by a load process, in interleaved segments with and
 * without the SDK in the same server process (pairs in the order AB, BA, AB, …, so drift in the
 * machine's load falls on both sides). A shared machine moves latency between runs by more than
 * the SDK adds, so the SDK's added latency is taken per pair (the SDK segment against the
 * baseline segment next to it) and reported as the median over the pairs, beside the pooled
 * p50/p99 of each side.
 *
 * Measured directly in the server, per request: the SDK's synchronous time on the request path
 * (its capture hook, timed with performance.now(), plus what its response wrappers add to the
 * handler), in the response's `finish` listener (where it takes the end time and status), and
 * where it builds, serialises and queues the records later in the same turn of the event loop
 * (its deferred build, timed around `buildDeferred`: per record, and per turn as one stretch,
 * since a turn's records are built together); per segment: the event-loop delay histogram (perf_hooks.monitorEventLoopDelay,
 * 1 ms resolution), which catches any long synchronous stretch of the SDK's background work
 * (batching, gzip, sending) that delays requests. The SDK segment ends with a flush, so its
 * background work never spills into a baseline segment. A last run with the ingest unreachable
 * shows the host's RSS growth bounded by the queue size.
 *
 *   npx tsx sdk/node/bench/overhead.ts [--rate 5000] [--pairs 16] [--segment 2] [--down 10]
 *                                      [--pace even|burst] [--pin | --isolate]
 *
 * `--pace even` (default) sends each request at its own time, 1/rate apart (as wrk2's constant
 * throughput mode); `--pace burst` sends what is due on a 1 ms timer, i.e. bursts of five at
 * 5,000/s, where each request also waits for the server's work on the ones before it in the
 * burst, so every µs the SDK adds per request shows up several times over in the burst's latency.
 * `--pin` runs the server on CPU 0 and the load process, fake ingest and driver on CPU 1.
 * `--isolate` leaves CPU 0 to the server's main thread alone and drives it with loadc.c (beside this file).
 *
 * Roles (forked by the main process): `ingest` (a fake ingest: checks gzip, answers 202, serves an
 * empty /sdk), `server <ingestUrl> <endpoint>` (the host), `load <url>` (the client).
 */
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzip } from 'node:zlib';
import { constants, monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';
import { Tapline } from '../src/index.js';

type Msg = Record<string, unknown>;

/** A load segment: latencies (µs) in answer order; with loadc, each request's send time (µs, monotonic clock). */
interface LoadResult {
  lat: number[];
  sentAt?: number[];
  errors: number;
  achieved: number;
}

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}

/**
 * `--isolate`: the host's main thread alone on CPU 0, as on a host with cores to spare; its other
 * threads (V8's compiler and GC helpers, libuv's pool where gzip runs), the load, the fake ingest
 * and the driver on CPU 1; the load is loadc.c (no garbage collector of its own) at real-time
 * priority when the bench runs as root, so its clock reads answers when they arrive.
 */
const ISOLATE = process.argv.includes('--isolate');
const PIN = process.argv.includes('--pin') || ISOLATE;
/** How the load process spaces its requests: `even` (default) or `burst` (a 1 ms timer). */
const PACE = (process.argv.includes('--pace') && process.argv[process.argv.indexOf('--pace') + 1]) || 'even';

function child(args: string[], cpu?: number): ChildProcess {
  const cp = fork(process.argv[1]!, [...args, '--pace', PACE, ...(ISOLATE ? ['--isolate'] : [])], {
    execArgv: [...process.execArgv, '--expose-gc'],
    stdio: 'inherit',
  });
  if (PIN && cpu !== undefined && cp.pid)
    execFileSync('taskset', ['-a', '-cp', String(cpu), String(cp.pid)], { stdio: 'ignore' });
  return cp;
}

/** Moves every thread of `pid` but its main thread to CPU 1 (--isolate); returns how many. */
function offMainThread(pid: number): number {
  let moved = 0;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    if (tid === String(pid)) continue;
    execFileSync('taskset', ['-cp', '1', tid], { stdio: 'ignore' });
    moved++;
  }
  return moved;
}

/** Compiles loadc.c with the system's C compiler once per source version; returns the binary. */
function buildLoadc(): string {
  const src = path.join(path.dirname(fileURLToPath(import.meta.url)), 'loadc.c');
  const text = fs.readFileSync(src);
  const bin = path.join(
    os.tmpdir(),
    `tapline-loadc-${createHash('sha256').update(text).digest('hex').slice(0, 12)}`,
  );
  if (fs.existsSync(bin)) return bin;
  try {
    execFileSync(process.env.CC ?? 'cc', ['-O2', '-o', bin, src], { stdio: 'inherit' });
  } catch {
    throw new Error('--isolate needs a C compiler (cc, or CC=...) to build sdk/node/bench/loadc.c');
  }
  return bin;
}

/**
 * The machine's floor (--isolate): loadc's own C server alone on CPU 0 under the same load, so
 * the host's figures can be read against what the machine does with no runtime in the server.
 */
async function floorRun(loadc: string, rate: number, seconds: number): Promise<LoadResult> {
  const srv = spawn('taskset', ['-c', '0', loadc, 'serve', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<string>((resolve, reject) => {
      srv.on('error', reject);
      srv.stdout.once('data', (c: Buffer) => resolve(/listening (\d+)/.exec(c.toString())?.[1] ?? ''));
    });
    const target = new URL(`http://127.0.0.1:${port}`);
    await runLoadc(loadc, target, rate, 1);
    return await runLoadc(loadc, target, rate, seconds);
  } finally {
    srv.kill();
  }
}

function ask<T = Msg>(cp: ChildProcess, msg?: object): Promise<T> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`child exited ${code}`));
    cp.once('exit', onExit);
    cp.once('message', (m) => {
      cp.removeListener('exit', onExit);
      resolve(m as T);
    });
    if (msg) cp.send(msg);
  });
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN;
}

const sortNum = (xs: number[]) => xs.sort((a, b) => a - b);

function median(xs: number[]): number {
  const s = sortNum([...xs]);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

// ---------------------------------------------------------------------------------------------
// fake ingest

async function ingestRole(): Promise<void> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET') {
        res.end(JSON.stringify({ redactAt: 'client', redactionRules: [], exclusionRules: [], settings: {} }));
        return;
      }
      // A real ingest runs on other machines: this one only checks the gzip magic bytes, so that
      // decompressing and parsing the batches takes no CPU from the host's two cores.
      const gz = Buffer.concat(chunks);
      res.statusCode = gz[0] === 0x1f && gz[1] === 0x8b ? 202 : 400;
      res.end('{"rejected":[]}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  process.send!({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
}

// ---------------------------------------------------------------------------------------------
// host: one server, the SDK switched on and off per segment

interface SegmentReport {
  mode: 'baseline' | 'sdk';
  requests: number;
  /** µs: the SDK's capture hook (sdk segments; 0 for baseline) */
  hook: number[];
  /** µs: the hello handler's own synchronous time (with the SDK's response wrappers in sdk segments) */
  handler: number[];
  /** µs: the response's `finish` listeners (the SDK takes the end time and status there) */
  finish: number[];
  /** µs per record: the SDK's deferred build (serialise and queue), a turn's stretch split evenly */
  build: number[];
  /** µs: each turn's deferred build as one stretch */
  buildTurn: number[];
  /** event-loop delay percentiles, µs */
  eld: { p50: number; p99: number; max: number };
  /** event-loop utilisation over the segment */
  elu: number;
  /** garbage collections in the segment: count, total and longest pause (µs) */
  gc: { count: number; totalUs: number; maxUs: number; major: number; over1ms: number };
  /** the segment's pauses as [start, end] on the monotonic clock, µs (loadc's clock, --isolate) */
  gcPauses: [number, number][];
  cpuMicrosPerRequest: number;
  rss: number;
  stats: Msg | null;
}

async function serverRole(ingestUrl: string, endpoint: string): Promise<void> {
  const hello = (_req: http.IncomingMessage, res: http.ServerResponse) => {
    res.setHeader('content-type', 'application/json');
    res.end('{"hello":"world"}');
  };
  const tapline = new Tapline({
    endpoint,
    settingsEndpoint: ingestUrl,
    bucketSid: 'bkt_bench',
    token: 'bench',
    handleProcessEvents: false,
    maxQueueBytes: 16 * 1024 * 1024,
  });
  // The SDK's capture hook alone: httpHandler around a handler that does nothing.
  const hook = tapline.httpHandler((_req: http.IncomingMessage, _res: http.ServerResponse) => undefined);
  let mode: 'baseline' | 'sdk' = 'baseline';
  let recording = false;
  let seg = {
    hook: [] as number[],
    handler: [] as number[],
    finish: [] as number[],
    build: [] as number[],
    buildTurn: [] as number[],
    requests: 0,
  };
  // The SDK builds the records of finished requests later in the turn (TaplineCore.defer); the
  // bench times that work around the instance's buildDeferred, records counted by `captured`.
  const core = (
    tapline as unknown as {
      core: { buildDeferred(all?: boolean): void; counters: { captured: number; skipped: number } };
    }
  ).core;
  const buildDeferred = core.buildDeferred.bind(core);
  core.buildDeferred = (all?: boolean) => {
    const n0 = core.counters.captured + core.counters.skipped;
    const b0 = performance.now();
    buildDeferred(all);
    const us = (performance.now() - b0) * 1000;
    const n = core.counters.captured + core.counters.skipped - n0;
    if (!recording || n === 0) return;
    seg.buildTurn.push(us);
    for (let i = 0; i < n; i++) seg.build.push(us / n);
  };
  const server = http.createServer((req, res) => {
    let f0 = 0;
    // Ours run first and last among the `finish` listeners, so they bracket the SDK's.
    res.prependListener('finish', () => (f0 = performance.now()));
    const t0 = performance.now();
    if (mode === 'sdk') hook(req, res);
    const t1 = performance.now();
    hello(req, res);
    const t2 = performance.now();
    res.on('finish', () => {
      if (recording) seg.finish.push((performance.now() - f0) * 1000);
    });
    if (recording) {
      seg.requests++;
      seg.hook.push((t1 - t0) * 1000);
      seg.handler.push((t2 - t1) * 1000);
    }
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  // Let the settings arrive before measuring.
  while (!tapline.stats().settingsLoaded) await new Promise((r) => setTimeout(r, 50));
  // libuv starts its pool's threads at the first task: started now, they exist when --isolate
  // moves the process's other threads off the main thread's CPU.
  if (ISOLATE) await new Promise((r) => gzip(Buffer.alloc(1), r));
  process.send!({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  const eld = monitorEventLoopDelay({ resolution: 1 });
  const gc = { count: 0, totalUs: 0, maxUs: 0, major: 0, over1ms: 0 };
  let gcPauses: [number, number][] = [];
  // performance.now() and process.hrtime() both read the monotonic clock, from different origins.
  const monoOffsetUs = Number(process.hrtime.bigint() / 1000n) - performance.now() * 1000;
  new PerformanceObserver((list) => {
    if (!recording) return;
    for (const e of list.getEntries()) {
      // The full collection the bench forces between segments is not the host's.
      if (
        (((e as { detail?: { flags?: number } }).detail?.flags ?? 0) &
          constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) !==
        0
      )
        continue;
      gc.count++;
      if (((e as { detail?: { kind?: number } }).detail?.kind ?? 0) === constants.NODE_PERFORMANCE_GC_MAJOR)
        gc.major++;
      if (e.duration > 1) gc.over1ms++;
      gc.totalUs += e.duration * 1000;
      gc.maxUs = Math.max(gc.maxUs, e.duration * 1000);
      const at = monoOffsetUs + e.startTime * 1000;
      gcPauses.push([at, at + e.duration * 1000]);
    }
  }).observe({ entryTypes: ['gc'] });
  let cpu = process.cpuUsage();
  let elu = performance.eventLoopUtilization();
  process.on('message', (m: Msg) => {
    if (m.cmd === 'start') {
      mode = m.mode as 'baseline' | 'sdk';
      seg = { hook: [], handler: [], finish: [], build: [], buildTurn: [], requests: 0 };
      global.gc?.();
      Object.assign(gc, { count: 0, totalUs: 0, maxUs: 0, major: 0, over1ms: 0 });
      gcPauses = [];
      eld.reset();
      eld.enable();
      cpu = process.cpuUsage();
      elu = performance.eventLoopUtilization();
      recording = true;
      process.send!({ ok: true });
    } else if (m.cmd === 'end') {
      recording = false;
      eld.disable();
      const used = process.cpuUsage(cpu);
      const util = performance.eventLoopUtilization(elu).utilization;
      // RSS after a full collection: what the host retains, not garbage waiting for the next GC.
      global.gc?.();
      const report: SegmentReport = {
        mode,
        requests: seg.requests,
        hook: seg.hook,
        handler: seg.handler,
        finish: seg.finish,
        build: seg.build,
        buildTurn: seg.buildTurn,
        eld: { p50: eld.percentile(50) / 1000, p99: eld.percentile(99) / 1000, max: eld.max / 1000 },
        elu: util,
        gc: { ...gc },
        gcPauses,
        cpuMicrosPerRequest: (used.user + used.system) / Math.max(1, seg.requests),
        rss: process.memoryUsage().rss,
        stats: mode === 'sdk' ? (tapline.stats() as unknown as Msg) : null,
      };
      mode = 'baseline';
      // The SDK's queue is sent before the next segment starts (unless the ingest is down).
      const settle = report.mode === 'sdk' && !m.noFlush ? tapline.flush(10_000) : Promise.resolve(true);
      void settle.then(() => process.send!(report));
    } else if (m.cmd === 'stop') void tapline.shutdown(100).then(() => process.exit(0));
  });
}

// ---------------------------------------------------------------------------------------------
// load generator: open loop at a fixed rate, latency per request

/** One segment of loadc (--isolate): latencies from send to the whole answer, µs. */
function runLoadc(bin: string, target: URL, rate: number, seconds: number): Promise<LoadResult> {
  const args = [target.hostname, target.port, String(rate), String(seconds), '/hello?x=1'];
  // Real-time priority needs root (CAP_SYS_NICE); otherwise it runs at normal priority.
  const asRoot = process.getuid?.() === 0;
  const cp = spawn(asRoot ? 'chrt' : bin, asRoot ? ['-f', '50', bin, ...args] : args, {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const out: Buffer[] = [];
  cp.stdout.on('data', (c: Buffer) => out.push(c));
  return new Promise((resolve, reject) => {
    cp.on('error', reject);
    cp.on('close', (code) => {
      if (code !== 0) return reject(new Error(`loadc exited ${code}`));
      const lat: number[] = [];
      const due: number[] = [];
      let errors = 0;
      let start = 0;
      for (const line of Buffer.concat(out).toString('utf8').split('\n')) {
        if (line.startsWith('# errors ')) errors = Number(line.slice(9));
        else if (line.startsWith('# start ')) start = Number(line.slice(8));
        else if (line) {
          const sp = line.indexOf(' ');
          due.push(Number(line.slice(0, sp)));
          lat.push(Number(line.slice(sp + 1)));
        }
      }
      resolve({ lat, sentAt: due.map((d) => start + d), errors, achieved: lat.length / seconds });
    });
  });
}

async function loadRole(url: string, loadc?: string): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const target = new URL(url);
  process.on('message', (m: Msg) => {
    if (m.cmd === 'stop') {
      agent.destroy();
      process.exit(0);
    }
    const rate = Number(m.rate);
    const seconds = Number(m.seconds);
    if (loadc) {
      void runLoadc(loadc, target, rate, seconds).then(
        (r) => process.send!(r),
        (err: Error) => {
          console.error(err.message);
          process.exit(1);
        },
      );
      return;
    }
    const lat: number[] = [];
    let errors = 0;
    let sent = 0;
    let inflight = 0;
    const one = () => {
      sent++;
      inflight++;
      const t0 = process.hrtime.bigint();
      const req = http.request(
        { host: target.hostname, port: target.port, path: '/hello?x=1', agent, headers: { 'x-bench': '1' } },
        (res) => {
          res.on('data', () => undefined);
          res.on('end', () => {
            lat.push(Number(process.hrtime.bigint() - t0) / 1000);
            inflight--;
          });
        },
      );
      req.on('error', () => {
        errors++;
        inflight--;
      });
      req.end();
    };
    const start = performance.now();
    const finish = () => {
      const wait = setInterval(() => {
        if (inflight > 0) return;
        clearInterval(wait);
        process.send!({ lat, errors, achieved: lat.length / seconds });
      }, 5);
    };
    if (PACE === 'burst') {
      // A 1 ms timer sends what is due: at 5,000/s, bursts of five requests back to back.
      const tick = setInterval(() => {
        const elapsed = (performance.now() - start) / 1000;
        if (elapsed >= seconds) {
          clearInterval(tick);
          finish();
          return;
        }
        const due = Math.floor(elapsed * rate) - sent;
        for (let i = 0; i < due; i++) one();
      }, 1);
      return;
    }
    // Even pacing (as wrk2's constant throughput): each request sent at its own time, 1/rate
    // apart. The loop turns with setImmediate, so it polls for answers between sends and keeps
    // one core busy; a send that comes late (the loop was busy) goes out at once.
    const spin = () => {
      const elapsed = (performance.now() - start) / 1000;
      if (elapsed >= seconds) {
        finish();
        return;
      }
      const due = Math.floor(elapsed * rate) - sent;
      for (let i = 0; i < due; i++) one();
      setImmediate(spin);
    };
    setImmediate(spin);
  });
  process.send!({ ready: true });
}

// ---------------------------------------------------------------------------------------------
// main

interface Side {
  lat: number[];
  hook: number[];
  handler: number[];
  finish: number[];
  build: number[];
  buildTurn: number[];
  eldP99: number[];
  eldMax: number[];
  elu: number[];
  cpu: number[];
  p50: number[];
  p99: number[];
  gcCount: number;
  gcMajor: number;
  gcOver1ms: number;
  gcTotalUs: number;
  gcMax: number[];
  requests: number;
  /** requests over SLOW_US, and of them those during a GC pause (--isolate) */
  slow: number;
  slowGc: number;
}

const side = (): Side => ({
  lat: [],
  hook: [],
  handler: [],
  finish: [],
  build: [],
  buildTurn: [],
  eldP99: [],
  eldMax: [],
  elu: [],
  cpu: [],
  p50: [],
  p99: [],
  gcCount: 0,
  gcMajor: 0,
  gcOver1ms: 0,
  gcTotalUs: 0,
  gcMax: [],
  requests: 0,
  slow: 0,
  slowGc: 0,
});

async function segment(
  server: ChildProcess,
  load: ChildProcess,
  mode: 'baseline' | 'sdk',
  rate: number,
  seconds: number,
  noFlush = false,
): Promise<{ report: SegmentReport; lat: number[]; errors: number; achieved: number; slow: Slow }> {
  await ask(server, { cmd: 'start', mode });
  const l = await ask<LoadResult>(load, { cmd: 'run', rate, seconds });
  const report = await ask<SegmentReport>(server, { cmd: 'end', noFlush });
  return {
    report,
    slow: slowRequests(l, report.gcPauses),
    lat: sortNum(l.lat),
    errors: l.errors,
    achieved: l.achieved,
  };
}

/** Latency above which a request counts as slow in the attribution below, µs. */
const SLOW_US = 500;

interface Slow {
  /** requests answered in more than SLOW_US */
  n: number;
  /** of them, those in flight while a garbage-collection pause of the host ran */
  duringGc: number;
}

/**
 * Slow requests, and how many of them overlapped one of the host's GC pauses (known with loadc,
 * whose send times are on the server's monotonic clock): what the collector's pauses explain of
 * the tail, the rest being the host's other work and the machine.
 */
function slowRequests(l: LoadResult, pauses: [number, number][]): Slow {
  const out = { n: 0, duringGc: 0 };
  if (l.sentAt === undefined) return out;
  for (let i = 0; i < l.lat.length; i++) {
    const lat = l.lat[i]!;
    if (lat <= SLOW_US) continue;
    out.n++;
    const t0 = l.sentAt[i]!;
    if (pauses.some(([a, b]) => t0 < b && t0 + lat > a)) out.duringGc++;
  }
  return out;
}

const f = (x: number) => x.toFixed(1);

async function main(): Promise<void> {
  const role = process.argv[2];
  if (role === 'ingest') return ingestRole();
  if (role === 'server') return serverRole(process.argv[3]!, process.argv[4]!);
  if (role === 'load') return loadRole(process.argv[3]!, ISOLATE ? process.argv[4] : undefined);

  const rate = arg('rate', 5000);
  const pairs = arg('pairs', 16);
  const seconds = arg('segment', 2);
  const downSeconds = arg('down', 10);
  if (PIN) execFileSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' });
  const ingest = child(['ingest'], 1);
  const { url: ingestUrl } = await ask<{ url: string }>(ingest);
  const loadc = ISOLATE ? buildLoadc() : '';
  const server = child(['server', ingestUrl, ingestUrl], 0);
  const { url } = await ask<{ url: string }>(server);
  const moved = ISOLATE ? offMainThread(server.pid!) : 0;
  const load = child(['load', url, loadc], 1);
  await ask(load);
  // Warm-up of both paths (JIT, connections), not counted.
  for (const mode of ['baseline', 'sdk'] as const) await segment(server, load, mode, rate, 1);

  const floor = ISOLATE ? await floorRun(loadc, rate, seconds * 2) : undefined;
  const sides = { baseline: side(), sdk: side() };
  const diffs = { p50: [] as number[], p99: [] as number[] };
  let errors = 0;
  let sdkStats: Msg | null = null;
  for (let i = 0; i < pairs; i++) {
    const order = i % 2 === 0 ? (['baseline', 'sdk'] as const) : (['sdk', 'baseline'] as const);
    const pair: Record<string, { p50: number; p99: number }> = {};
    for (const mode of order) {
      const s = await segment(server, load, mode, rate, seconds);
      const x = sides[mode];
      errors += s.errors;
      for (const v of s.lat) x.lat.push(v);
      for (const v of s.report.hook) x.hook.push(v);
      for (const v of s.report.handler) x.handler.push(v);
      for (const v of s.report.finish) x.finish.push(v);
      for (const v of s.report.build) x.build.push(v);
      for (const v of s.report.buildTurn) x.buildTurn.push(v);
      x.eldP99.push(s.report.eld.p99);
      x.eldMax.push(s.report.eld.max);
      x.elu.push(s.report.elu);
      x.cpu.push(s.report.cpuMicrosPerRequest);
      x.gcCount += s.report.gc.count;
      x.gcMajor += s.report.gc.major;
      x.gcOver1ms += s.report.gc.over1ms;
      x.gcTotalUs += s.report.gc.totalUs;
      x.gcMax.push(s.report.gc.maxUs);
      x.requests += s.report.requests;
      x.slow += s.slow.n;
      x.slowGc += s.slow.duringGc;
      const p = { p50: pct(s.lat, 0.5), p99: pct(s.lat, 0.99) };
      x.p50.push(p.p50);
      x.p99.push(p.p99);
      pair[mode] = p;
      if (s.report.stats) sdkStats = s.report.stats;
    }
    diffs.p50.push(pair.sdk!.p50 - pair.baseline!.p50);
    diffs.p99.push(pair.sdk!.p99 - pair.baseline!.p99);
    console.log(
      `pair ${String(i + 1).padStart(2)}: baseline p50 ${f(pair.baseline!.p50)} p99 ${f(pair.baseline!.p99)} µs, ` +
        `sdk p50 ${f(pair.sdk!.p50)} p99 ${f(pair.sdk!.p99)} µs`,
    );
  }
  await ask(server, { cmd: 'stop' }).catch(() => undefined);

  // The ingest unreachable: RSS bounded by the queue (16 MiB), records dropped oldest first.
  const downServer = child(['server', ingestUrl, 'http://127.0.0.1:9'], 0);
  const down = await ask<{ url: string }>(downServer);
  if (ISOLATE) offMainThread(downServer.pid!);
  const downLoad = child(['load', down.url, loadc], 1);
  await ask(downLoad);
  await segment(downServer, downLoad, 'sdk', rate, 1, true);
  const rss0 = (await segment(downServer, downLoad, 'baseline', rate, 1)).report.rss;
  // Two runs back to back: RSS after the second against the first shows whether it levels off.
  const d1 = await segment(downServer, downLoad, 'sdk', rate, downSeconds, true);
  const d = await segment(downServer, downLoad, 'sdk', rate, downSeconds, true);
  await ask(downServer, { cmd: 'stop' }).catch(() => undefined);

  const b = sides.baseline;
  const s = sides.sdk;
  for (const x of [b, s]) {
    sortNum(x.lat);
    sortNum(x.hook);
    sortNum(x.handler);
    sortNum(x.finish);
    sortNum(x.build);
    sortNum(x.buildTurn);
  }
  const sdkSync50 =
    pct(s.hook, 0.5) + (pct(s.handler, 0.5) - pct(b.handler, 0.5)) + pct(s.finish, 0.5) - pct(b.finish, 0.5);
  const sdkSync99 =
    pct(s.hook, 0.99) +
    (pct(s.handler, 0.99) - pct(b.handler, 0.99)) +
    pct(s.finish, 0.99) -
    pct(b.finish, 0.99);
  const floorSorted = floor ? sortNum([...floor.lat]) : [];
  const sdkAll50 = sdkSync50 + pct(s.build, 0.5);
  const sdkAll99 = sdkSync99 + pct(s.build, 0.99);
  console.log(
    `\n${pairs} pairs of ${seconds} s segments at ${rate} requests/s (${b.lat.length + s.lat.length} requests, errors ${errors}); ` +
      `${
        ISOLATE
          ? `isolated: the server's main thread alone on CPU 0 (its ${moved} other threads on CPU 1), loadc on CPU 1${process.getuid?.() === 0 ? ' at real-time priority' : ''}`
          : `pacing ${PACE}, ${PIN ? 'the server pinned to CPU 0, the rest to CPU 1' : 'not pinned'}`
      }\n` +
      `client latency, pooled:        baseline p50 ${f(pct(b.lat, 0.5))} p99 ${f(pct(b.lat, 0.99))} µs | ` +
      `sdk p50 ${f(pct(s.lat, 0.5))} p99 ${f(pct(s.lat, 0.99))} µs | difference p50 ${f(pct(s.lat, 0.5) - pct(b.lat, 0.5))} p99 ${f(pct(s.lat, 0.99) - pct(b.lat, 0.99))} µs\n` +
      `client latency, per pair:      median difference p50 ${f(median(diffs.p50))} µs, p99 ${f(median(diffs.p99))} µs ` +
      `(p99 differences range ${f(Math.min(...diffs.p99))} … ${f(Math.max(...diffs.p99))})\n` +
      `SDK synchronous time per request, measured in the server:\n` +
      `  capture hook:            p50 ${f(pct(s.hook, 0.5))} p99 ${f(pct(s.hook, 0.99))} µs\n` +
      `  handler with wrappers:   p50 ${f(pct(s.handler, 0.5))} p99 ${f(pct(s.handler, 0.99))} µs (baseline ${f(pct(b.handler, 0.5))} / ${f(pct(b.handler, 0.99))})\n` +
      `  finish listeners:        p50 ${f(pct(s.finish, 0.5))} p99 ${f(pct(s.finish, 0.99))} µs (baseline ${f(pct(b.finish, 0.5))} / ${f(pct(b.finish, 0.99))})\n` +
      `  added, all three:        p50 ${f(sdkSync50)} µs, p99 ${f(sdkSync99)} µs\n` +
      `SDK deferred build (serialise and queue, later in the same turn, after the turn's responses):\n` +
      `  per record:              p50 ${f(pct(s.build, 0.5))} p99 ${f(pct(s.build, 0.99))} µs\n` +
      `  per turn, one stretch:   p50 ${f(pct(s.buildTurn, 0.5))} p99 ${f(pct(s.buildTurn, 0.99))} max ${f(s.buildTurn[s.buildTurn.length - 1] ?? NaN)} µs (${s.buildTurn.length} turns)\n` +
      `SDK time per request on the event loop (all three + build per record): p50 ${f(sdkAll50)} µs, p99 ${f(sdkAll99)} µs\n` +
      `event-loop delay (1 ms timer), median over segments: baseline p99 ${f(median(b.eldP99))} max ${f(median(b.eldMax))} µs | ` +
      `sdk p99 ${f(median(s.eldP99))} max ${f(median(s.eldMax))} µs\n` +
      `event-loop utilisation: baseline ${f(median(b.elu) * 100)} % | sdk ${f(median(s.elu) * 100)} %; ` +
      `server CPU per request: baseline ${f(median(b.cpu))} | sdk ${f(median(s.cpu))} µs (all included: capture, batching, JSON, gzip, HTTP)\n` +
      `garbage collection: baseline ${b.gcCount} pauses (${b.gcMajor} major, ${b.gcOver1ms} over 1 ms), ${f(b.gcTotalUs / b.requests)} µs per request, longest ${f(Math.max(...b.gcMax))} µs | ` +
      `sdk ${s.gcCount} pauses (${s.gcMajor} major, ${s.gcOver1ms} over 1 ms), ${f(s.gcTotalUs / s.requests)} µs per request, longest ${f(Math.max(...s.gcMax))} µs\n` +
      (ISOLATE
        ? `requests over ${SLOW_US} µs: baseline ${b.slow} (${b.slowGc} in flight during a GC pause) | sdk ${s.slow} (${s.slowGc})\n`
        : '') +
      (floor
        ? `machine floor (loadc's C server alone on CPU 0, ${floor.lat.length} requests): p50 ${f(pct(floorSorted, 0.5))} ` +
          `p99 ${f(pct(floorSorted, 0.99))} µs, ${slowRequests(floor, []).n} over ${SLOW_US} µs\n`
        : '') +
      `SDK counters: sent ${String(sdkStats?.sent)} dropped ${String(sdkStats?.dropped)} batches ${String(sdkStats?.batches)}\n` +
      `ingest unreachable for 2 × ${downSeconds} s at ${rate}/s: RSS growth ${f((d1.report.rss - rss0) / 1048576)} MiB ` +
      `after the first, ${f((d.report.rss - rss0) / 1048576)} MiB after the second, ` +
      `queued ${String(d.report.stats?.queuedBytes)} B (bound 16 MiB), dropped ${String(d.report.stats?.dropped)}, ` +
      `client p50 ${f(pct(d.lat, 0.5))} p99 ${f(pct(d.lat, 0.99))} µs`,
  );
  load.send({ cmd: 'stop' });
  downLoad.send({ cmd: 'stop' });
  ingest.kill();
}

void main();
