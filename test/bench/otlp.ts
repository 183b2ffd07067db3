/**
 * `npx tsx test/bench/otlp.ts`: the throughput of `POST /v1/traces` (OTLP/HTTP trace ingest) in
 * spans/s, per encoding (protobuf, JSON).
 *
 * Each export holds `--spans-per-export` spans (default 512, the OpenTelemetry SDK's batch
 * size): four in five are HTTP server/client spans (stored as request records), one in five an
 * INTERNAL span (counted and skipped), with distinct ids and the attributes instrumentation-http
 * sets. `--concurrency` senders post pre-encoded exports over keep-alive connections until
 * `--spans` spans were accepted. A 200 means the records are durable in Kafka, so "accepted" is
 * the ingest's rate; "stored" waits until the processor stored every HTTP span of the phase
 * (pipeline/stats) and is the end-to-end rate.
 *
 * Target: `--ingest URL --api URL --token T --account A --bucket B` for a running service;
 * without them it starts one (`services/main.ts` with tsx, which starts Kafka and Postgres) in a
 * fresh DATA_DIR under .cache/ and uses its demo account. `runOtlpBench(target, opts)` is what
 * test/bench/bench.ts can call with its own target.
 *
 * The `batch` phase (in the default `--encodings protobuf,json,batch`) posts the records those
 * HTTP spans become to the batch ingest, 100 per call, from the same senders: the reference rate
 * in the same run, since figures on a shared machine move with its load.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { decodeExportRequest, encodeExportRequest } from '../../services/ingest/otlp/otlp.codec.js';
import { mapExport } from '../../services/ingest/otlp/span.mapper.js';
import { freePort, poll, ROOT, type DemoCredentials } from './bench-stack.js';

export interface OtlpTarget {
  ingest: string;
  api: string;
  token: string;
  account: string;
  bucket: string;
}

export interface OtlpBenchOptions {
  spans: number;
  spansPerExport: number;
  concurrency: number;
  /** `batch`: the same HTTP spans as records to `/v1/buckets/{b}/ingest`, 100 per call (a reference in the same run) */
  encodings: ('protobuf' | 'json' | 'batch')[];
  log?: (s: string) => void;
}

export interface OtlpPhaseResult {
  encoding: 'protobuf' | 'json' | 'batch';
  spans: number;
  httpSpans: number;
  exports: number;
  bytesPerExport: number;
  statuses: Record<string, number>;
  sendSeconds: number;
  /** spans accepted (200) per second */
  spansPerSecond: number;
  /** HTTP spans stored per second, from the first send to the last stored record */
  storedHttpSpansPerSecond: number | null;
}

const HTTP_SHARE = 4; // of every 5 spans
const BATCH_RECORDS = 100;

/** One OTLP/JSON export of `n` spans starting near now (OTLP/JSON: hex ids, int64 as strings). */
function makeExport(n: number, bucket: string): Record<string, unknown> {
  const start = BigInt(Date.now()) * 1_000_000n;
  const kv = (key: string, v: string | number) => ({
    key,
    value: typeof v === 'number' ? { intValue: v } : { stringValue: v },
  });
  const spans = [];
  for (let i = 0; i < n; i++) {
    const http = i % 5 < HTTP_SHARE;
    const server = i % 2 === 0;
    const id = 1000 + (i % 97);
    spans.push({
      traceId: randomBytes(16).toString('hex'),
      spanId: randomBytes(8).toString('hex'),
      name: http ? `GET /users/:id` : 'load-user',
      kind: http ? (server ? 2 : 3) : 1,
      startTimeUnixNano: String(start + BigInt(i) * 1000n),
      endTimeUnixNano: String(start + BigInt(i) * 1000n + 3_250_000n),
      attributes: http
        ? server
          ? [
              kv('http.request.method', 'GET'),
              kv('url.scheme', 'http'),
              kv('url.path', `/users/${id}`),
              kv('url.query', 'fields=name'),
              kv('server.address', 'shop.example.com'),
              kv('server.port', 8080),
              kv('http.route', '/users/:id'),
              kv('http.response.status_code', i % 50 === 0 ? 500 : 200),
              kv('client.address', '10.0.0.7'),
              kv('user_agent.original', 'bench/1.0'),
              kv('network.protocol.version', '1.1'),
            ]
          : [
              kv('http.request.method', 'GET'),
              kv('url.full', `http://inventory.internal:9000/stock?user=${id}`),
              kv('server.address', 'inventory.internal'),
              kv('server.port', 9000),
              kv('http.response.status_code', 200),
              kv('network.protocol.version', '1.1'),
            ]
        : [kv('code.function', 'loadUser')],
    });
  }
  return {
    resourceSpans: [
      {
        resource: {
          attributes: [
            kv('service.name', 'bench-shop'),
            kv('deployment.environment.name', 'bench'),
            kv('tapline.bucket', bucket),
          ],
        },
        scopeSpans: [{ scope: { name: '@opentelemetry/instrumentation-http' }, spans }],
      },
    ],
  };
}

async function stats(target: OtlpTarget, since: string): Promise<number> {
  const res = await fetch(
    `${target.api}/v1/accounts/${target.account}/pipeline/stats?bucketSid=${target.bucket}&startDate=${encodeURIComponent(since)}`,
    { headers: { authorization: `Bearer ${target.token}` } },
  );
  if (res.status !== 200) throw new Error(`pipeline/stats answered ${res.status}`);
  return ((await res.json()) as { stored: number }).stored;
}

export async function runOtlpBench(target: OtlpTarget, opts: OtlpBenchOptions): Promise<OtlpPhaseResult[]> {
  const log = opts.log ?? ((s: string) => console.log(s));
  const results: OtlpPhaseResult[] = [];
  for (const encoding of opts.encodings) {
    // A few distinct bodies, encoded once: the senders measure the server, not the encoder.
    // `batch` sends the records the HTTP spans of the same exports become, 100 per call.
    const perBody = encoding === 'batch' ? BATCH_RECORDS : opts.spansPerExport;
    const bodies = Array.from({ length: 8 }, () => {
      const json = makeExport(opts.spansPerExport, target.bucket);
      if (encoding === 'protobuf') return encodeExportRequest(json);
      if (encoding === 'json') return Buffer.from(JSON.stringify(json));
      const mapped = mapExport(decodeExportRequest(Buffer.from(JSON.stringify(json)), 'json'), null);
      const records = [...mapped.byBucket.values()].flat().slice(0, BATCH_RECORDS);
      return Buffer.from(JSON.stringify({ records }));
    });
    const contentType = encoding === 'protobuf' ? 'application/x-protobuf' : 'application/json';
    const url =
      encoding === 'batch'
        ? `${target.ingest}/v1/buckets/${target.bucket}/ingest`
        : `${target.ingest}/v1/traces`;
    const exportsWanted = Math.ceil(opts.spans / perBody);
    const statuses: Record<string, number> = {};
    let next = 0;
    let accepted = 0;
    // The stats window starts a little before the first send (createdAt is the spans' start).
    const since = new Date(Date.now() - 60_000).toISOString();
    const before = await stats(target, since);
    log(
      `otlp ${encoding}: ${exportsWanted} calls of ${perBody} ${encoding === 'batch' ? 'records' : 'spans'}, ${opts.concurrency} senders`,
    );
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: opts.concurrency }, async () => {
        while (next < exportsWanted) {
          const body = bodies[next++ % bodies.length]!;
          const res = await fetch(url, {
            method: 'POST',
            headers: { authorization: `Bearer ${target.token}`, 'content-type': contentType },
            body,
          });
          await res.arrayBuffer();
          statuses[res.status] = (statuses[res.status] ?? 0) + 1;
          if (res.status === 200 || res.status === 202) accepted++;
        }
      }),
    );
    const sendSeconds = (performance.now() - t0) / 1000;
    const spans = accepted * perBody;
    const httpSpans = encoding === 'batch' ? spans : accepted * Math.ceil((perBody * HTTP_SHARE) / 5);
    let storedRate: number | null = null;
    try {
      await poll(async () => (await stats(target, since)) - before >= httpSpans, {
        timeoutMs: 300_000,
        intervalMs: 250,
        what: 'every HTTP span stored',
      });
      storedRate = httpSpans / ((performance.now() - t0) / 1000);
    } catch (err) {
      log(`  stored count not reached: ${(err as Error).message}`);
    }
    const r: OtlpPhaseResult = {
      encoding,
      spans,
      httpSpans,
      exports: accepted,
      bytesPerExport: Math.round(bodies.reduce((n, b) => n + b.length, 0) / bodies.length),
      statuses,
      sendSeconds,
      spansPerSecond: spans / sendSeconds,
      storedHttpSpansPerSecond: storedRate,
    };
    const unit = encoding === 'batch' ? 'records' : 'spans';
    log(
      `  ${encoding}: ${Math.round(r.spansPerSecond)} ${unit}/s accepted (${r.spans} ${unit} in ` +
        `${sendSeconds.toFixed(2)} s, ${r.bytesPerExport} B/call, statuses ${JSON.stringify(statuses)}); ` +
        `${storedRate === null ? 'n/a' : Math.round(storedRate)} ${encoding === 'batch' ? 'records' : 'HTTP spans'}/s stored end to end`,
    );
    results.push(r);
  }
  return results;
}

/** Starts `services/main.ts` (tsx) in a fresh DATA_DIR; resolves with its target and a stop function. */
async function startOwnService(
  log: (s: string) => void,
): Promise<{ target: OtlpTarget; stop: () => Promise<void> }> {
  const dataDir = path.join(ROOT, '.cache', `bench-otlp-${Date.now()}`);
  fs.mkdirSync(dataDir, { recursive: true });
  const env: Record<string, string> = {
    PORT: String(await freePort()),
    INGEST_PORT: String(await freePort()),
    KAFKA_PORT: String(await freePort()),
    KAFKA_CONTROLLER_PORT: String(await freePort()),
    PG_PORT: String(await freePort()),
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_STANDARD: '1000000000',
    // The ingest's calls per minute per token and bucket: the bench's calls are not limited.
    INGEST_RATE_LIMIT_TOKEN: '1000000000',
    INGEST_RATE_LIMIT_BUCKET: '1000000000',
  };
  log(`starting the service (DATA_DIR ${path.relative(ROOT, dataDir)})`);
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'services', 'main.ts')], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logFile = fs.createWriteStream(path.join(dataDir, 'service.log'));
  child.stderr.pipe(logFile);
  let demo: DemoCredentials | undefined;
  let json = '';
  let inDemo = false;
  createInterface({ input: child.stdout }).on('line', (line) => {
    logFile.write(`${line}\n`);
    if (line.includes('Tapline demo account')) inDemo = true;
    else if (inDemo && (json || line.startsWith('{'))) {
      json += `${line}\n`;
      if (line.startsWith('}')) {
        inDemo = false;
        demo = JSON.parse(json) as DemoCredentials;
      }
    }
  });
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  const api = `http://127.0.0.1:${env.PORT}`;
  const ingest = `http://127.0.0.1:${env.INGEST_PORT}`;
  await poll(
    async () => {
      if (child.exitCode !== null) throw new Error(`service exited; see ${dataDir}/service.log`);
      const ok = await Promise.all([
        fetch(`${api}/readyz`).then(
          (r) => r.status === 200,
          () => false,
        ),
        fetch(`${ingest}/healthz`).then(
          (r) => r.status === 200,
          () => false,
        ),
      ]);
      return ok.every(Boolean) && demo;
    },
    { timeoutMs: 240_000, intervalMs: 500, what: 'service ready with demo credentials' },
  );
  return {
    target: { api, ingest, token: demo!.apiToken, account: demo!.accountSid, bucket: demo!.bucketSid },
    stop: async () => {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      await exited;
      clearTimeout(timer);
      logFile.end();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

if (path.resolve(process.argv[1] ?? '') === path.resolve(import.meta.filename)) {
  const { values: opt } = parseArgs({
    options: {
      spans: { type: 'string', default: '200000' },
      'spans-per-export': { type: 'string', default: '512' },
      concurrency: { type: 'string', default: '8' },
      encodings: { type: 'string', default: 'protobuf,json,batch' },
      ingest: { type: 'string' },
      api: { type: 'string' },
      token: { type: 'string' },
      account: { type: 'string' },
      bucket: { type: 'string' },
      json: { type: 'string' },
    },
  });
  const log = (s: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${s}`);
  const own =
    opt.ingest && opt.api && opt.token && opt.account && opt.bucket ? undefined : await startOwnService(log);
  const target: OtlpTarget = own?.target ?? {
    ingest: opt.ingest!,
    api: opt.api!,
    token: opt.token!,
    account: opt.account!,
    bucket: opt.bucket!,
  };
  try {
    // A short warm-up (JIT, connections, Kafka metadata) before the measured phases.
    await runOtlpBench(target, {
      spans: 10_240,
      spansPerExport: Number(opt['spans-per-export']),
      concurrency: Number(opt.concurrency),
      encodings: ['protobuf'],
      log: () => undefined,
    });
    const results = await runOtlpBench(target, {
      spans: Number(opt.spans),
      spansPerExport: Number(opt['spans-per-export']),
      concurrency: Number(opt.concurrency),
      encodings: opt.encodings.split(',') as OtlpBenchOptions['encodings'],
      log,
    });
    if (opt.json) fs.writeFileSync(opt.json, JSON.stringify(results, null, 2));
  } finally {
    await own?.stop();
  }
}
