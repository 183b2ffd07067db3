/**
 * Overhead of the SDK in the host: a hello-world node:http server driven at a fixed rate
 * (default 5,000 requests/s, open loop) without and with the SDK, alternating, each in a fresh
 * process. Reports per-request latency p50/p99 seen by the client (the difference is the SDK's
 * added latency), the server's CPU µs per request, and its RSS growth; a last run with the
 * ingest unreachable shows RSS bounded by the queue size.
 *
 *   npx tsx sdk/node/bench/overhead.ts [--rate 5000] [--seconds 10] [--rounds 2]
 *
 * Roles (forked by the main process): `ingest` (a fake ingest: gunzips, answers 202, serves an
 * empty /sdk), `server <mode> <ingestUrl>` (the host), `load <url> <rate> <seconds>` (the client).
 */
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { Tapline } from '../src/index.js';

type Msg = Record<string, unknown>;

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}

function child(args: string[]): ChildProcess {
  return fork(process.argv[1]!, args, { execArgv: [...process.execArgv, '--expose-gc'], stdio: 'inherit' });
}

function next(cp: ChildProcess): Promise<Msg> {
  return new Promise((resolve, reject) => {
    cp.once('message', (m) => resolve(m as Msg));
    cp.once('exit', (code) => reject(new Error(`child exited ${code}`)));
  });
}

// ---------------------------------------------------------------------------------------------
// fake ingest

async function ingestRole(): Promise<void> {
  let records = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET') {
        res.end(JSON.stringify({ redactAt: 'client', redactionRules: [], exclusionRules: [], settings: {} }));
        return;
      }
      const body = JSON.parse(gunzipSync(Buffer.concat(chunks)).toString()) as { records: unknown[] };
      records += body.records.length;
      res.statusCode = 202;
      res.end(JSON.stringify({ accepted: body.records.length, rejected: [] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  process.send!({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  process.on('message', () => process.send!({ records }));
}

// ---------------------------------------------------------------------------------------------
// host

async function serverRole(mode: string, ingestUrl: string): Promise<void> {
  const hello = (_req: http.IncomingMessage, res: http.ServerResponse) => {
    res.setHeader('content-type', 'application/json');
    res.end('{"hello":"world"}');
  };
  let tapline: Tapline | undefined;
  if (mode !== 'baseline') {
    tapline = new Tapline({
      endpoint: mode === 'sdk-ingest-down' ? 'http://127.0.0.1:9' : ingestUrl,
      settingsEndpoint: ingestUrl,
      bucketSid: 'bkt_bench',
      token: 'bench',
      handleProcessEvents: false,
      maxQueueBytes: 16 * 1024 * 1024,
    });
  }
  const handler = tapline ? tapline.httpHandler(hello) : hello;
  // In-process timings, independent of the load generator: the handler's synchronous time (the
  // SDK's capture start and its response wrappers are on this path) and the time of the
  // response's `finish` listeners (where the SDK builds and queues the record, after the
  // response was handed to the socket). Our listeners bracket the SDK's.
  const inPath: number[] = [];
  const onFinish: number[] = [];
  let recording = false;
  const server = http.createServer((req, res) => {
    let f0 = 0;
    res.prependListener('finish', () => (f0 = performance.now()));
    const t0 = performance.now();
    handler(req, res);
    const t1 = performance.now();
    res.on('finish', () => {
      if (recording) onFinish.push((performance.now() - f0) * 1000);
    });
    if (recording) inPath.push((t1 - t0) * 1000);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  // Let the settings arrive before measuring.
  await new Promise((r) => setTimeout(r, 300));
  process.send!({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  let cpu = process.cpuUsage();
  let rss = 0;
  process.on('message', (m: Msg) => {
    if (m.cmd === 'mark') {
      recording = true;
      global.gc?.();
      cpu = process.cpuUsage();
      rss = process.memoryUsage().rss;
      process.send!({ ok: true });
    } else if (m.cmd === 'report') {
      const used = process.cpuUsage(cpu);
      recording = false;
      const pct = (xs: number[], p: number) => {
        xs.sort((a, b) => a - b);
        return xs[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? NaN;
      };
      global.gc?.();
      const rssNow = process.memoryUsage().rss;
      process.send!({
        cpuMicros: used.user + used.system,
        rssStart: rss,
        rssEnd: rssNow,
        stats: tapline?.stats() ?? null,
        inPath50: pct(inPath, 0.5),
        inPath99: pct(inPath, 0.99),
        finish50: pct(onFinish, 0.5),
        finish99: pct(onFinish, 0.99),
      });
      void (tapline?.shutdown(100) ?? Promise.resolve()).then(() => process.exit(0));
    }
  });
}

// ---------------------------------------------------------------------------------------------
// load generator: open loop at a fixed rate, latency per request

async function loadRole(url: string, rate: number, seconds: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: rate === 0 ? 1 : 64 });
  const target = new URL(url);
  const lat: number[] = [];
  let errors = 0;
  let sent = 0;
  let inflight = 0;
  const one = (done?: () => void) => {
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
          done?.();
        });
      },
    );
    req.on('error', () => {
      errors++;
      inflight--;
      done?.();
    });
    req.end();
  };
  const start = performance.now();
  if (rate === 0) {
    // Closed loop: one connection, one call at a time; no queue can build up in the client.
    while ((performance.now() - start) / 1000 < seconds) {
      await new Promise<void>((resolve) => one(resolve));
    }
  } else
    await new Promise<void>((resolve) => {
      const tick = setInterval(() => {
        const elapsed = (performance.now() - start) / 1000;
        if (elapsed >= seconds) {
          clearInterval(tick);
          resolve();
          return;
        }
        const due = Math.floor(elapsed * rate) - sent;
        for (let i = 0; i < due; i++) one();
      }, 1);
    });
  while (inflight > 0) await new Promise((r) => setTimeout(r, 5));
  lat.sort((a, b) => a - b);
  const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? NaN;
  process.send!({
    sent,
    errors,
    achieved: lat.length / seconds,
    p50: q(0.5),
    p90: q(0.9),
    p99: q(0.99),
    p999: q(0.999),
  });
  agent.destroy();
  process.exit(0);
}

// ---------------------------------------------------------------------------------------------
// main

interface Run {
  mode: string;
  inPath50: number;
  inPath99: number;
  finish50: number;
  finish99: number;
  p50: number;
  p99: number;
  achieved: number;
  errors: number;
  cpuPerReq: number;
  rssGrowthMB: number;
  stats: Msg | null;
}

async function measure(mode: string, ingestUrl: string, rate: number, seconds: number): Promise<Run> {
  const server = child(['server', mode, ingestUrl]);
  const { url } = (await next(server)) as { url: string };
  // warm-up, then the measured run
  const warm = child(['load', url, String(rate), '2']);
  await next(warm);
  server.send({ cmd: 'mark' });
  await next(server);
  const load = child(['load', url, String(rate), String(seconds)]);
  const l = (await next(load)) as {
    p50: number;
    p99: number;
    achieved: number;
    errors: number;
    sent: number;
  };
  server.send({ cmd: 'report' });
  const s = (await next(server)) as {
    cpuMicros: number;
    rssStart: number;
    rssEnd: number;
    stats: Msg | null;
    inPath50: number;
    inPath99: number;
    finish50: number;
    finish99: number;
  };
  return {
    mode,
    inPath50: s.inPath50,
    inPath99: s.inPath99,
    finish50: s.finish50,
    finish99: s.finish99,
    p50: l.p50,
    p99: l.p99,
    achieved: Math.round(l.achieved),
    errors: l.errors,
    cpuPerReq: s.cpuMicros / l.sent,
    rssGrowthMB: (s.rssEnd - s.rssStart) / 1048576,
    stats: s.stats,
  };
}

async function main(): Promise<void> {
  const role = process.argv[2];
  if (role === 'ingest') return ingestRole();
  if (role === 'server') return serverRole(process.argv[3]!, process.argv[4]!);
  if (role === 'load') return loadRole(process.argv[3]!, Number(process.argv[4]), Number(process.argv[5]));

  const rate = arg('rate', 5000);
  const seconds = arg('seconds', 10);
  const rounds = arg('rounds', 2);
  const ingest = child(['ingest']);
  const { url: ingestUrl } = (await next(ingest)) as { url: string };
  const runs: Run[] = [];
  for (let i = 0; i < rounds; i++) {
    for (const mode of ['baseline', 'sdk']) {
      const r = await measure(mode, ingestUrl, rate, seconds);
      runs.push(r);
      console.log(
        `${mode.padEnd(16)} in-path p50 ${r.inPath50.toFixed(1)} p99 ${r.inPath99.toFixed(1)} µs  ` +
          `finish p50 ${r.finish50.toFixed(1)} p99 ${r.finish99.toFixed(1)} µs  ` +
          `client p50 ${r.p50.toFixed(0)} p99 ${r.p99.toFixed(0)} µs  rate ${r.achieved}/s  ` +
          `CPU ${r.cpuPerReq.toFixed(1)} µs/req  RSS ${r.rssGrowthMB >= 0 ? '+' : ''}${r.rssGrowthMB.toFixed(1)} MB` +
          (r.errors ? `  errors ${r.errors}` : '') +
          (r.stats ? `  sent ${String(r.stats.sent)} dropped ${String(r.stats.dropped)}` : ''),
      );
    }
  }
  // Closed loop (one call at a time): the SDK's added latency as a client sees it, without the
  // queueing an open loop suffers when the machine's CPU is short.
  const closed: Run[] = [];
  for (let i = 0; i < rounds; i++)
    for (const mode of ['baseline', 'sdk']) {
      const r = await measure(mode, ingestUrl, 0, Math.min(seconds, 5));
      closed.push(r);
      console.log(
        `${mode.padEnd(16)} closed loop: ${r.achieved} calls/s  p50 ${r.p50.toFixed(1)} µs  p99 ${r.p99.toFixed(1)} µs`,
      );
    }
  const down = await measure('sdk-ingest-down', ingestUrl, rate, seconds);
  console.log(
    `sdk-ingest-down  in-path p50 ${down.inPath50.toFixed(1)} p99 ${down.inPath99.toFixed(1)} µs  ` +
      `finish p50 ${down.finish50.toFixed(1)} p99 ${down.finish99.toFixed(1)} µs  rate ${down.achieved}/s  ` +
      `CPU ${down.cpuPerReq.toFixed(1)} µs/req  RSS ${down.rssGrowthMB.toFixed(1)} MB  ` +
      `queued ${String(down.stats?.queuedBytes)} B (bound 16 MiB) dropped ${String(down.stats?.dropped)}`,
  );
  const med = (xs: number[]) => {
    xs.sort((a, b) => a - b);
    const m = Math.floor(xs.length / 2);
    return xs.length % 2 ? xs[m]! : (xs[m - 1]! + xs[m]!) / 2;
  };
  const closedOf = (m: string, k: 'p50' | 'p99') => med(closed.filter((r) => r.mode === m).map((r) => r[k]));
  type K = 'p50' | 'p99' | 'cpuPerReq' | 'inPath50' | 'inPath99' | 'finish50' | 'finish99';
  const of = (m: string, k: K) => med(runs.filter((r) => r.mode === m).map((r) => r[k]));
  const d = (k: K) => (of('sdk', k) - of('baseline', k)).toFixed(1);
  console.log(
    `\nadded by the SDK per captured request (median of ${rounds} rounds):\n` +
      `  on the request path (handler, synchronous): p50 ${d('inPath50')} µs, p99 ${d('inPath99')} µs\n` +
      `  after the response (finish listener): p50 ${d('finish50')} µs, p99 ${d('finish99')} µs\n` +
      `  both (what one captured request costs the event loop): p50 ${(Number(d('inPath50')) + Number(d('finish50'))).toFixed(1)} µs\n` +
      `  client-measured latency at ${rate}/s (open loop): p50 ${d('p50')} µs, p99 ${d('p99')} µs (noisy on a shared machine)\n` +
      `  client-measured latency, closed loop: p50 ${(closedOf('sdk', 'p50') - closedOf('baseline', 'p50')).toFixed(1)} µs, ` +
      `p99 ${(closedOf('sdk', 'p99') - closedOf('baseline', 'p99')).toFixed(1)} µs\n` +
      `  server CPU, all included (capture, batching, JSON, gzip, HTTP): ${d('cpuPerReq')} µs/request`,
  );
  ingest.kill();
}

void main();
