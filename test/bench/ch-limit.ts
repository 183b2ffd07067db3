/**
 * Limit (a): raw ClickHouse insert rate of the benchmark's records from Node, no HTTP and no Kafka.
 * Forked by bench.ts: its own chDB data directory (one process per chDB directory), or with
 * `server` its own ClickHouse server process (`--clickhouse server`; the server's CPU counted with
 * this process's, merges during the run included), the project's
 * migrations (so the materialized views cost what they cost in the service), and the processor's
 * own path per block: `toRow` of every record with its line as the stored text, then
 * `RequestsWriter.insert` with a dedup token.
 *
 * Records are cloned from JSON strings before each block (untimed), as the processor gets fresh
 * objects from JSON.parse of the Kafka message.
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import { startClickHouseServer } from '../../infra/local/clickhouse-server.launcher.js';
import { createClickHouse, migrateClickHouse } from '../../services/shared/clickhouse.js';
import { ensureClickHouseDatabase } from '../../services/shared/clickhouse-database.js';
import { newSid } from '../../services/shared/ids.js';
import type { StoredRecord } from '../../services/processor/pipeline.js';
import { RequestsWriter } from '../../services/processor/requests.writer.js';
import { toRow } from '../../services/processor/row.mapper.js';
import { endpointTemplate } from '../../services/processor/steps/endpoint.step.js';
import { cpuSeconds, freePort, ROOT } from './bench-stack.js';
import { ingestRecord, rng } from './records.js';

export interface ChLimitConfig {
  dir: string;
  records: number;
  block: number;
  poolRecords: number;
  environments: string[];
  seed: number;
  /** insert over HTTP into a ClickHouse server of its own (its CPU counted) instead of chDB */
  server?: boolean;
}

export interface ChLimitResult {
  records: number;
  blocks: number;
  /** toRow + insert, records/s */
  rate: number;
  mapSeconds: number;
  insertSeconds: number;
  /** CPU seconds of this process (Node + chDB threads) and of the server if any, per 100,000 records */
  cpuSecondsPer100k: number;
}

async function run(cfg: ChLimitConfig): Promise<ChLimitResult> {
  fs.rmSync(cfg.dir, { recursive: true, force: true });
  const log = pino({ level: 'warn' });
  const server = cfg.server
    ? await startClickHouseServer({
        cacheDir: path.join(ROOT, '.cache'),
        dataDir: path.join(cfg.dir, 'server'),
        httpPort: await freePort(),
        tcpPort: await freePort(),
        log,
      })
    : undefined;
  const chCfg = {
    url: server?.url,
    path: cfg.dir,
    database: 'tapline',
    user: 'default',
    password: '',
    retentionDays: 30,
    mode: server ? ('server' as const) : ('embedded' as const),
    httpPort: 0,
    tcpPort: 0,
  };
  if (server) await ensureClickHouseDatabase(chCfg);
  const ch = createClickHouse(chCfg);
  // The server's CPU (inserts, views, merges) counts with this process's: the write path costs both.
  const serverCpu = () => (server ? cpuSeconds(server.pid) : 0);
  try {
    await migrateClickHouse(ch, chCfg, log);
    const writer = new RequestsWriter(ch);
    const r = rng(cfg.seed);
    const receivedAt = new Date().toISOString();
    const pool: string[] = [];
    for (let i = 0; i < cfg.poolRecords; i++) {
      const rec = ingestRecord(r, { environments: cfg.environments });
      const req = rec.request as Record<string, unknown>;
      Object.assign(rec, {
        sid: newSid('request'),
        accountSid: 'acc_benchlimit',
        bucketSid: `bkt_benchlimit${i % 4}`,
        receivedAt,
        contextSid: null,
        firewall: { blocked: false },
        endpoint: endpointTemplate(String(req.path)),
      });
      pool.push(JSON.stringify(rec));
    }
    let mapMs = 0;
    let insertMs = 0;
    let done = 0;
    let blocks = 0;
    let cpuUs = 0;
    while (done < cfg.records) {
      const n = Math.min(cfg.block, cfg.records - done);
      const records: StoredRecord[] = [];
      for (let i = 0; i < n; i++) records.push(JSON.parse(pool[(done + i) % pool.length]!) as StoredRecord);
      const c0 = process.cpuUsage();
      const s0 = serverCpu();
      const t0 = performance.now();
      // The stored text is the record's own line, copied once, as the processor stores a record no
      // step changed (requests.sink.ts `keptText`), not the record serialised again.
      const rows = records.map((rec, i) =>
        toRow(rec, 0, done + i, Buffer.from(pool[(done + i) % pool.length]!)),
      );
      const t1 = performance.now();
      await writer.insert(rows, RequestsWriter.token('bench.limit', 0, { min: done, max: done + n - 1 }));
      const t2 = performance.now();
      const c = process.cpuUsage(c0);
      cpuUs += c.user + c.system + (serverCpu() - s0) * 1e6;
      mapMs += t1 - t0;
      insertMs += t2 - t1;
      done += n;
      blocks++;
    }
    return {
      records: done,
      blocks,
      rate: done / ((mapMs + insertMs) / 1000),
      mapSeconds: mapMs / 1000,
      insertSeconds: insertMs / 1000,
      cpuSecondsPer100k: (cpuUs / 1e6 / done) * 1e5,
    };
  } finally {
    // The parent removes the directory after this process exited (chDB lets go of it at exit).
    await ch.close();
    await server?.stop();
  }
}

process.on('message', (cfg: ChLimitConfig) => {
  void run(cfg).then(
    (result) => process.send!({ type: 'done', result }, () => process.exit(0)),
    (err: Error) =>
      process.send!({ type: 'error', message: err.stack ?? err.message }, () => process.exit(1)),
  );
});
