/**
 * One load-generator process (forked by bench.ts with `--import tsx`). It pre-generates its
 * payloads before the start signal, so the measured time holds no generation cost, then sends them
 * over keep-alive HTTP/1.1 connections and reports ack latencies and status counts.
 *
 * Modes:
 * - `batch`: POST /v1/buckets/{b}/ingest with `{records: [...]}` of `batch` records;
 * - `single`: the existing SDKs' wire format, one call per POST / with the headers
 *   Authorization, Api-Traffic-Bucket-Sid, Api-Traffic-Sdk, Api-Traffic-Sdk-Version.
 *
 * NOTE: the HTTP client is a minimal keep-alive HTTP/1.1 client on raw sockets (whole requests
 * pre-serialised, one write each, responses framed by Content-Length). On a 2-core machine the
 * generators share the CPU with the service; node:http costs ~30–50 µs of client CPU per request,
 * which at 15,000 single-record requests/s would take most of a core away from the service.
 */
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { ingestRecord, rng, sdkCall } from './records.js';

export interface LoadgenConfig {
  mode: 'batch' | 'single';
  /** ingest listener base URL, http://host:port */
  ingestUrl: string;
  token: string;
  buckets: string[];
  environments: string[];
  /** records this generator sends */
  records: number;
  /** records per request in batch mode */
  batch: number;
  /** connections of this generator */
  connections: number;
  /** records/s of this generator; 0 = as fast as acknowledged */
  rate: number;
  /** distinct pre-generated records, cycled */
  poolRecords: number;
  seed: number;
  /**
   * batch mode: > 0 gives every record a `consumer` among this many ids (`cus_<k>`, k = floor(n u^3)
   * for u uniform in [0, 1): a few busy, most rare; docs/consumers.md); 0 or absent: none
   */
  consumers?: number;
}

export interface LoadgenResult {
  requests: number;
  sentRecords: number;
  /** records acknowledged with 202 (the `accepted` count of each answer) */
  ackedRecords: number;
  rejectedRecords: number;
  statuses: Record<string, number>;
  errors: number;
  firstSendMs: number;
  lastAckMs: number;
  /** every request's ack latency in ms (the parent merges generators' quantiles) */
  latencies: number[];
  poolBytes: number;
  /** CPU seconds this generator used while sending */
  cpu: number;
}

type Msg = { type: 'config'; config: LoadgenConfig } | { type: 'go' };

interface Response {
  status: number;
  body: Buffer;
}

/** One keep-alive connection, one request in flight. */
class Connection {
  private socket: net.Socket | undefined;
  private buf: Buffer = Buffer.alloc(0);
  private waiter: { resolve: (r: Response) => void; reject: (e: Error) => void } | undefined;

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  private connect(): Promise<net.Socket> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host: this.host, port: this.port });
      s.setNoDelay(true);
      s.once('connect', () => resolve(s));
      s.once('error', reject);
      s.on('data', (chunk: Buffer) => this.onData(chunk));
      s.on('close', () => {
        if (this.socket === s) this.socket = undefined;
        this.fail(new Error('connection closed'));
      });
      s.on('error', (err) => this.fail(err));
    });
  }

  private fail(err: Error): void {
    const w = this.waiter;
    this.waiter = undefined;
    this.buf = Buffer.alloc(0);
    w?.reject(err);
  }

  private onData(chunk: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    const end = this.buf.indexOf('\r\n\r\n');
    if (end < 0) return;
    const head = this.buf.toString('latin1', 0, end);
    const m = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    if (!m) {
      this.socket?.destroy();
      this.fail(new Error(`response without content-length: ${head.slice(0, 200)}`));
      return;
    }
    const total = end + 4 + Number(m[1]);
    if (this.buf.length < total) return;
    const status = Number(head.slice(9, 12));
    const body = this.buf.subarray(end + 4, total);
    this.buf = this.buf.length > total ? this.buf.subarray(total) : Buffer.alloc(0);
    const closing = /\r\nconnection:\s*close/i.test(head);
    const w = this.waiter;
    this.waiter = undefined;
    if (closing) {
      const s = this.socket;
      this.socket = undefined;
      s?.destroy();
    }
    w?.resolve({ status, body });
  }

  async send(request: Buffer): Promise<Response> {
    this.socket ??= await this.connect();
    return new Promise<Response>((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.socket!.write(request);
    });
  }

  close(): void {
    this.socket?.destroy();
    this.socket = undefined;
  }
}

interface Prepared {
  request: Buffer;
  records: number;
}

/** Whole HTTP requests, bytes ready to write, cycled by the senders. */
function prepare(cfg: LoadgenConfig): { requests: Prepared[]; poolBytes: number } {
  const url = new URL(cfg.ingestUrl);
  const r = rng(cfg.seed);
  const gen = { environments: cfg.environments };
  const requests: Prepared[] = [];
  let poolBytes = 0;
  const perRequest = cfg.mode === 'batch' ? cfg.batch : 1;
  const count = Math.max(1, Math.ceil(cfg.poolRecords / perRequest));
  for (let i = 0; i < count; i++) {
    const bucket = cfg.buckets[i % cfg.buckets.length]!;
    let body: Buffer;
    let head: string;
    if (cfg.mode === 'batch') {
      const recs: string[] = [];
      for (let j = 0; j < perRequest; j++) {
        const rec = ingestRecord(r, gen);
        if (cfg.consumers) rec.consumer = { id: `cus_${Math.floor(cfg.consumers * r() ** 3)}` };
        recs.push(JSON.stringify(rec));
      }
      body = Buffer.from(`{"records":[${recs.join(',')}]}`);
      head =
        `POST /v1/buckets/${bucket}/ingest HTTP/1.1\r\nHost: ${url.host}\r\n` +
        `Authorization: Bearer ${cfg.token}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\n\r\n`;
    } else {
      body = Buffer.from(JSON.stringify(sdkCall(r, gen)));
      head =
        `POST / HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${cfg.token}\r\n` +
        `Api-Traffic-Bucket-Sid: ${bucket}\r\nApi-Traffic-Sdk: tapline-bench\r\nApi-Traffic-Sdk-Version: 1.0.0\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    }
    poolBytes += body.length;
    requests.push({ request: Buffer.concat([Buffer.from(head, 'latin1'), body]), records: perRequest });
  }
  return { requests, poolBytes };
}

async function run(cfg: LoadgenConfig, pool: Prepared[], poolBytes: number): Promise<LoadgenResult> {
  const url = new URL(cfg.ingestUrl);
  const perRequest = cfg.mode === 'batch' ? cfg.batch : 1;
  const total = Math.ceil(cfg.records / perRequest);
  const latencies = new Float64Array(total);
  const res: LoadgenResult = {
    requests: 0,
    sentRecords: 0,
    ackedRecords: 0,
    rejectedRecords: 0,
    statuses: {},
    errors: 0,
    firstSendMs: Date.now(),
    lastAckMs: 0,
    latencies: [],
    poolBytes,
    cpu: 0,
  };
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  let next = 0;
  const sender = async () => {
    const conn = new Connection(url.hostname, Number(url.port));
    for (;;) {
      const i = next++;
      if (i >= total) break;
      if (cfg.rate > 0) {
        const due = start + ((i * perRequest) / cfg.rate) * 1000;
        const wait = due - performance.now();
        if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      }
      const p = pool[i % pool.length]!;
      const t = performance.now();
      try {
        const answer = await conn.send(p.request);
        latencies[i] = performance.now() - t;
        res.statuses[answer.status] = (res.statuses[answer.status] ?? 0) + 1;
        if (answer.status === 202) {
          if (cfg.mode === 'batch') {
            const b = JSON.parse(answer.body.toString('utf8')) as { accepted: number; rejected: unknown[] };
            res.ackedRecords += b.accepted;
            res.rejectedRecords += b.rejected.length;
          } else res.ackedRecords += 1;
          res.lastAckMs = Date.now();
        }
      } catch {
        latencies[i] = performance.now() - t;
        res.errors++;
      }
      res.requests++;
      res.sentRecords += p.records;
    }
    conn.close();
  };
  await Promise.all(Array.from({ length: Math.max(1, cfg.connections) }, sender));
  res.latencies = Array.from(latencies.subarray(0, res.requests));
  const cpu = process.cpuUsage(cpu0);
  res.cpu = (cpu.user + cpu.system) / 1e6;
  return res;
}

let config: LoadgenConfig | undefined;
let prepared: { requests: Prepared[]; poolBytes: number } | undefined;
process.on('message', (msg: Msg) => {
  if (msg.type === 'config') {
    config = msg.config;
    prepared = prepare(config);
    process.send!({ type: 'ready', poolBytes: prepared.poolBytes, requests: prepared.requests.length });
  } else if (msg.type === 'go' && config && prepared) {
    void run(config, prepared.requests, prepared.poolBytes).then(
      (result) => process.send!({ type: 'done', result }, () => process.exit(0)),
      (err: Error) => process.send!({ type: 'error', message: err.message }, () => process.exit(1)),
    );
  }
});
process.on('disconnect', () => process.exit(0));
