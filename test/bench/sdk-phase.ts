/**
 * The `sdk` phase of `npm run bench`: the end-to-end rate of the Node.js SDK's path (sdk/node,
 * docs/sdk.md). A host process (this module forked with `sdk-host`) runs a node:http server
 * wrapped with `tapline.httpHandler`, pointed at the real ingest with the bench's token and
 * bucket; the SDK batches what it captures (500 records, 1 MB or 1 s, gzip) to
 * `POST /v1/buckets/{b}/ingest`. This process drives the host with `connections` keep-alive
 * connections until `requests` calls were answered (every other one a POST with a JSON body),
 * asks the host to flush, then waits until every record the ingest accepted is stored
 * (pipeline/stats).
 *
 * Figures: the host's captured requests/s, the SDK's delivery rate (records accepted by the
 * ingest from the first call until the flush returned) and the end-to-end rate (first call →
 * last record stored), with the SDK's own counters (batches, dropped, retries).
 */
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Tapline } from '../../sdk/node/src/index.js';
import { poll } from './bench-stack.js';

export interface SdkPhaseTarget {
  ingest: string;
  api: string;
  token: string;
  account: string;
  bucket: string;
}

export interface SdkPhaseOptions {
  requests: number;
  /** records for the delivery-path-only measure (0: skipped) */
  directRecords: number;
  connections: number;
  log?: (s: string) => void;
}

export interface SdkPhaseResult {
  requests: number;
  errors: number;
  /** answered calls per second of driving the host */
  hostRequestsPerSec: number;
  /** records the ingest accepted from the SDK, per second from the first call until the flush returned */
  deliveredRecordsPerSec: number;
  /** records stored, per second from the first call until the last one was queryable */
  e2eRecordsPerSec: number | null;
  e2eSeconds: number | null;
  sdk: SdkStats;
  /** the delivery path alone: records put straight into the SDK's queue, no HTTP host in front */
  direct: {
    records: number;
    deliveredRecordsPerSec: number;
    e2eRecordsPerSec: number | null;
    dropped: number;
  } | null;
}

interface SdkStats {
  captured: number;
  sent: number;
  rejected: number;
  dropped: number;
  batches: number;
  retries: number;
  failures: number;
  internalErrors: number;
}

type HostMsg = { url?: string; stats?: SdkStats; flushed?: boolean };

// ---------------------------------------------------------------------------------------------
// the host: a hello-world server with the SDK

async function hostRole(): Promise<void> {
  const cfg = await new Promise<SdkPhaseTarget>((resolve) =>
    process.once('message', (m) => resolve(m as SdkPhaseTarget)),
  );
  const { Tapline } = await import('../../sdk/node/src/index.js');
  const tapline = new Tapline({
    endpoint: cfg.ingest,
    bucketSid: cfg.bucket,
    token: cfg.token,
    handleProcessEvents: false,
    // Large enough that nothing is dropped while the pipeline is slower than the host.
    maxQueueBytes: 256 * 1_048_576,
    tags: { bench: 'sdk' },
  });
  const server = http.createServer(
    tapline.httpHandler((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        res.end(`{"ok":true,"path":${JSON.stringify(req.url)},"received":${Buffer.concat(chunks).length}}`);
      });
    }),
  );
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  // The SDK sends nothing before its settings arrived once.
  await poll(async () => tapline.stats().settingsLoaded, { timeoutMs: 30_000, what: 'SDK settings' });
  process.send!({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  process.on('message', (m: { cmd: string; n?: number }) => {
    if (m.cmd === 'stats') process.send!({ stats: tapline.stats() });
    else if (m.cmd === 'flush')
      void tapline.flush(300_000).then((flushed) => process.send!({ flushed, stats: tapline.stats() }));
    else if (m.cmd === 'direct') void direct(tapline, m.n ?? 0);
    else if (m.cmd === 'stop') void tapline.shutdown(1000).then(() => server.close(() => process.exit(0)));
  });
}

/**
 * The delivery path alone: `n` records shaped as the capture makes them go straight into the
 * SDK's queue (no HTTP server in front), as fast as the queue drains below 32 MiB, then a flush.
 */
async function direct(tapline: Tapline, n: number): Promise<void> {
  const { newRecordSid } = await import('../../sdk/node/src/sid.js');
  const core = (tapline as unknown as { core: { enqueue(r: unknown): void } }).core;
  for (let i = 0; i < n; i++) {
    const post = i % 2 === 1;
    const path = post ? '/v1/orders' : `/v1/orders/${i % 5000}`;
    core.enqueue({
      sid: newRecordSid(),
      direction: 'in',
      createdAt: new Date().toISOString(),
      request: {
        host: '127.0.0.1',
        ip: '127.0.0.1',
        method: post ? 'POST' : 'GET',
        path,
        port: 8080,
        url: `http://127.0.0.1:8080${path}?expand=items`,
        queryString: { expand: 'items' },
        headers: { host: '127.0.0.1:8080', 'user-agent': 'tapline-bench/1.0', accept: 'application/json' },
        contentType: post ? 'application/json' : null,
        size: post ? BODY.length : 0,
        ...(post ? { body: BODY } : {}),
      },
      response: {
        statusCode: 200,
        headers: { 'content-type': 'application/json', 'content-length': '52' },
        contentType: 'application/json',
        size: 52,
        body: '{"ok":true,"path":"/v1/orders/1","received":0}',
      },
      timings: { duration: 0.4, phases: { firstByte: 0.3, download: 0.1, total: 0.4 } },
      endpoint: post ? '/v1/orders' : '/v1/orders/:id',
      tags: [{ key: 'bench', value: 'sdk-direct' }],
    });
    if (i % 1000 === 999) {
      await new Promise((r) => setImmediate(r));
      while (tapline.stats().queuedBytes > 32 * 1_048_576) await new Promise((r) => setTimeout(r, 5));
    }
  }
  const flushed = await tapline.flush(300_000);
  process.send!({ flushed, stats: tapline.stats() });
}

// ---------------------------------------------------------------------------------------------
// the phase

function ask(c: ChildProcess, msg: object): Promise<HostMsg> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`SDK host exited ${code}`));
    c.once('exit', onExit);
    c.once('message', (m) => {
      c.removeListener('exit', onExit);
      resolve(m as HostMsg);
    });
    c.send(msg);
  });
}

async function stored(target: SdkPhaseTarget, since: string): Promise<number> {
  const res = await fetch(
    `${target.api}/v1/accounts/${target.account}/pipeline/stats?bucketSid=${target.bucket}&startDate=${encodeURIComponent(since)}`,
    { headers: { authorization: `Bearer ${target.token}` } },
  );
  if (res.status !== 200) throw new Error(`pipeline/stats answered ${res.status}`);
  return ((await res.json()) as { stored: number }).stored;
}

const BODY = JSON.stringify({
  customerId: 'cus_8f2a91',
  items: [
    { sku: 'sku-1029', quantity: 2, price: 19.9 },
    { sku: 'sku-2211', quantity: 1, price: 5.5 },
  ],
  currency: 'EUR',
  note: 'leave at the door',
});

/** Drives the host with `connections` keep-alive connections until `n` calls were answered. */
async function drive(url: string, n: number, connections: number): Promise<{ errors: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const target = new URL(url);
  let next = 0;
  let errors = 0;
  const one = (i: number) =>
    new Promise<void>((resolve) => {
      const post = i % 2 === 1;
      const req = http.request(
        {
          host: target.hostname,
          port: target.port,
          agent,
          method: post ? 'POST' : 'GET',
          path: post ? `/v1/orders?source=bench` : `/v1/orders/${i % 5000}?expand=items&page=${i % 7}`,
          headers: {
            'user-agent': 'tapline-bench/1.0',
            accept: 'application/json',
            ...(post ? { 'content-type': 'application/json' } : {}),
          },
        },
        (res) => {
          res.on('data', () => undefined);
          res.on('end', () => resolve());
        },
      );
      req.on('error', () => {
        errors++;
        resolve();
      });
      req.end(post ? BODY : undefined);
    });
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next < n) await one(next++);
    }),
  );
  agent.destroy();
  return { errors };
}

async function directMeasure(
  host: ChildProcess,
  target: SdkPhaseTarget,
  since: string,
  n: number,
  log: (s: string) => void,
): Promise<NonNullable<SdkPhaseResult['direct']>> {
  const s0 = (await ask(host, { cmd: 'stats' })).stats!;
  const before = await stored(target, since);
  log(`sdk direct: ${n} records straight into the SDK's queue (no HTTP host)`);
  const t0 = performance.now();
  const flushed = await ask(host, { cmd: 'direct', n });
  const deliverSeconds = (performance.now() - t0) / 1000;
  const sent = flushed.stats!.sent - s0.sent;
  let e2e: number | null = null;
  try {
    await poll(async () => (await stored(target, since)) - before >= sent, {
      timeoutMs: 300_000,
      intervalMs: 250,
      what: 'every directly queued record stored',
    });
    e2e = sent / ((performance.now() - t0) / 1000);
  } catch (err) {
    log(`  sdk direct: stored count not reached: ${(err as Error).message}`);
  }
  const r = {
    records: sent,
    deliveredRecordsPerSec: sent / deliverSeconds,
    e2eRecordsPerSec: e2e,
    dropped: flushed.stats!.dropped - s0.dropped,
  };
  log(
    `  sdk direct: delivered ${Math.round(r.deliveredRecordsPerSec)} records/s, ` +
      `${e2e === null ? 'n/a' : Math.round(e2e)} records/s stored end to end; sent ${sent}, dropped ${r.dropped}`,
  );
  return r;
}

export async function runSdkPhase(target: SdkPhaseTarget, opts: SdkPhaseOptions): Promise<SdkPhaseResult> {
  const log = opts.log ?? ((s: string) => console.log(s));
  const host = fork(import.meta.filename, ['sdk-host'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const { url } = await ask(host, target);
    // A short warm-up (JIT, connections), not counted: its records are stored before the start.
    await drive(url!, 2000, opts.connections);
    await ask(host, { cmd: 'flush' });
    const s0 = (await ask(host, { cmd: 'stats' })).stats!;
    const since = new Date(Date.now() - 60_000).toISOString();
    await poll(async () => (await stored(target, since)) >= s0.sent, {
      timeoutMs: 120_000,
      intervalMs: 250,
      what: 'the warm-up records stored',
    });
    const before = await stored(target, since);
    log(`sdk: ${opts.requests} calls to a node:http host with the SDK, ${opts.connections} connections`);
    const t0 = performance.now();
    const { errors } = await drive(url!, opts.requests, opts.connections);
    const hostSeconds = (performance.now() - t0) / 1000;
    const flushed = await ask(host, { cmd: 'flush' });
    const deliverSeconds = (performance.now() - t0) / 1000;
    const s = flushed.stats!;
    const d = (k: keyof SdkStats) => s[k] - s0[k];
    const sent = d('sent');
    if (!flushed.flushed) log('  sdk: the flush timed out; records still queued');
    let e2eSeconds: number | null = null;
    try {
      await poll(async () => (await stored(target, since)) - before >= sent, {
        timeoutMs: 300_000,
        intervalMs: 250,
        what: 'every record the SDK delivered stored',
      });
      e2eSeconds = (performance.now() - t0) / 1000;
    } catch (err) {
      log(`  sdk: stored count not reached: ${(err as Error).message}`);
    }
    const r: SdkPhaseResult = {
      requests: opts.requests,
      errors,
      hostRequestsPerSec: (opts.requests - errors) / hostSeconds,
      deliveredRecordsPerSec: sent / deliverSeconds,
      e2eRecordsPerSec: e2eSeconds === null ? null : sent / e2eSeconds,
      e2eSeconds,
      sdk: {
        captured: d('captured'),
        sent,
        rejected: d('rejected'),
        dropped: d('dropped'),
        batches: d('batches'),
        retries: d('retries'),
        failures: d('failures'),
        internalErrors: d('internalErrors'),
      },
      direct: null,
    };
    if (opts.directRecords > 0) r.direct = await directMeasure(host, target, since, opts.directRecords, log);
    log(
      `  sdk: host ${Math.round(r.hostRequestsPerSec)} calls/s (${hostSeconds.toFixed(1)} s), ` +
        `delivered ${Math.round(r.deliveredRecordsPerSec)} records/s in ${r.sdk.batches} batches, ` +
        `${r.e2eRecordsPerSec === null ? 'n/a' : Math.round(r.e2eRecordsPerSec)} records/s stored end to end; ` +
        `captured ${r.sdk.captured}, sent ${sent}, rejected ${r.sdk.rejected}, dropped ${r.sdk.dropped}, ` +
        `retries ${r.sdk.retries}, errors ${errors}`,
    );
    return r;
  } finally {
    await Promise.race([
      ask(host, { cmd: 'stop' }).catch(() => undefined),
      new Promise((r) => setTimeout(r, 3000)),
    ]);
    if (host.exitCode === null) host.kill();
  }
}

if (process.argv[2] === 'sdk-host') void hostRole();
