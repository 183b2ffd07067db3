/**
 * The write path's cost against a ClickHouse server: the benchmark's records (test/bench/records.ts,
 * mapped by the processor's own `toRow`) inserted over HTTP into a ClickHouse server process started
 * from the chdb engine (infra/local/clickhouse-server.launcher.ts) with the project's migrations,
 * so the materialized views cost what they cost in the service. Per configuration — format
 * (RowBinary, JSONEachRow), request compression (none, gzip), block size, with or without the
 * materialized views — it reports CPU µs per record of the client (building the body and sending
 * it) and of the server (the insert and the views), and of the server again after its background
 * merges of those parts settle (merges included), all on this machine in one run.
 *
 * Last, the disk a stored record takes: `--disk-records` distinct records (none repeated, unlike
 * the timing runs) inserted in 20,000-record blocks, merged to one part, measured from system.parts
 * (compressed on disk and uncompressed, per record, `requests` and its aggregates).
 *
 *   npx tsx test/bench/ch-server-insert.ts [--records 100000] [--blocks 2000,5000,20000,50000]
 *        [--formats RowBinary,JSONEachRow] [--compress none,gzip] [--views with,without]
 *        [--disk-records 200000] [--record-bytes N] [--record-codec CODEC]
 *
 * `--record-bytes N` stores only the first N bytes of each record's text (the `record` column;
 * 0 for none), and `--record-codec` sets that column's codec (e.g. LZ4, NONE; the migrations'
 * is ZSTD(1)) before the runs: how the cost follows the bytes each record stores.
 */
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { pino } from 'pino';
import { startClickHouseServer } from '../../infra/local/clickhouse-server.launcher.js';
import { createClickHouse, migrateClickHouse } from '../../services/shared/clickhouse.js';
import { ensureClickHouseDatabase } from '../../services/shared/clickhouse-database.js';
import { parseConfig } from '../../services/shared/config.js';
import { newSid } from '../../services/shared/ids.js';
import type { StoredRecord } from '../../services/processor/pipeline.js';
import { rowBinary, toRow, type RequestRow } from '../../services/processor/row.mapper.js';
import { REQUESTS_INSERT_COLUMNS as COLUMN_LIST } from '../../services/shared/requests-row.js';
import { endpointTemplate } from '../../services/processor/steps/endpoint.step.js';
import { TABLES } from '../../services/shared/tables.js';
import { cpuSeconds } from './bench-stack.js';
import { ingestRecord, rng } from './records.js';

const gzip = promisify(zlib.gzip);

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : def;
}

const RECORDS = Number(arg('records', '100000'));
const BLOCKS = arg('blocks', '2000,5000,20000,50000').split(',').map(Number);
const FORMATS = arg('formats', 'RowBinary,JSONEachRow').split(',');
const COMPRESS = arg('compress', 'none,gzip').split(',');
const VIEWS = arg('views', 'with,without').split(',');
const DISK_RECORDS = Number(arg('disk-records', '200000'));
const RECORD_BYTES = arg('record-bytes', '');
const RECORD_CODEC = arg('record-codec', '');

interface Result {
  format: string;
  compress: string;
  views: string;
  block: number;
  records: number;
  recordsPerSec: number;
  clientCpuUsPerRecord: number;
  serverCpuUsPerRecord: number;
  serverCpuWithMergesUsPerRecord: number;
  bodyBytesPerRecord: number;
}

function jsonLines(rows: RequestRow[]): Buffer {
  const parts: string[] = [];
  for (const { created_at_ms: _c, received_at_ms: _r, record, ...row } of rows) {
    parts.push(
      JSON.stringify({ ...row, record: typeof record === 'string' ? record : record.toString('utf8') }),
    );
  }
  return Buffer.from(parts.join('\n'));
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync('/tmp/tapline-ch-insert-');
  const log = pino({ level: 'warn' });
  const server = await startClickHouseServer({
    cacheDir: '.cache',
    dataDir: `${dir}/server`,
    httpPort: 18000 + Math.floor(Math.random() * 2000),
    tcpPort: 20000 + Math.floor(Math.random() * 2000),
    log,
  });
  try {
    const cfg = parseConfig({ CLICKHOUSE_URL: server.url, DATA_DIR: dir });
    await ensureClickHouseDatabase(cfg.clickhouse);
    const ch = createClickHouse(cfg.clickhouse);
    await migrateClickHouse(ch, cfg.clickhouse, log);
    const views = (
      await (
        await ch.query({
          query: `SELECT name, create_table_query AS q FROM system.tables
                  WHERE database = currentDatabase() AND engine = 'MaterializedView'`,
          format: 'JSONEachRow',
        })
      ).json<{ name: string; q: string }>()
    ).map((v) => v.q);
    const targets = (
      await (
        await ch.query({
          query: `SELECT name FROM system.tables WHERE database = currentDatabase()
                  AND engine LIKE '%MergeTree' AND name != '${TABLES.migrations}'`,
          format: 'JSONEachRow',
        })
      ).json<{ name: string }>()
    ).map((t) => t.name);

    // A pool of records as the processor has them just before toRow.
    const r = rng(7);
    const receivedAt = new Date().toISOString();
    const stored = (i: number): StoredRecord => {
      const rec = ingestRecord(r, { environments: ['prod01', 'stage01'] });
      const req = rec.request as Record<string, unknown>;
      Object.assign(rec, {
        sid: newSid('request'),
        accountSid: 'acc_benchserver',
        bucketSid: `bkt_benchserver${i % 4}`,
        receivedAt,
        contextSid: null,
        firewall: { blocked: false },
        endpoint: endpointTemplate(String(req.path)),
      });
      return rec as unknown as StoredRecord;
    };
    const pool: StoredRecord[] = [];
    for (let i = 0; i < 5000; i++) pool.push(stored(i));
    const rows: RequestRow[] = [];
    for (let i = 0; i < Math.max(...BLOCKS); i++) rows.push(toRow(pool[i % pool.length]!, 0, i));
    if (RECORD_BYTES !== '')
      for (const row of rows) {
        const text = typeof row.record === 'string' ? Buffer.from(row.record) : row.record;
        row.record = text.subarray(0, Number(RECORD_BYTES));
      }
    if (RECORD_CODEC)
      await ch.command({
        query: `ALTER TABLE ${TABLES.requests} MODIFY COLUMN record String CODEC(${RECORD_CODEC})`,
      });

    const settle = async () => {
      // Background merges of the parts just written: wait until none runs and the part count is still.
      let last = -1;
      for (let quiet = 0; quiet < 4;) {
        const [m] = await (
          await ch.query({
            query: `SELECT (SELECT count() FROM system.merges) AS merges,
                           (SELECT count() FROM system.parts WHERE active AND database = currentDatabase()) AS parts`,
            format: 'JSONEachRow',
          })
        ).json<{ merges: number; parts: number }>();
        quiet = m!.merges === 0 && m!.parts === last ? quiet + 1 : 0;
        last = m!.parts;
        await new Promise((res) => setTimeout(res, 500));
      }
    };

    const results: Result[] = [];
    let token = 0;
    for (const viewMode of VIEWS) {
      if (viewMode === 'without') {
        for (const q of views) {
          const name = /VIEW\s+(\S+)/.exec(q)![1]!;
          await ch.command({ query: `DROP VIEW IF EXISTS ${name}` });
        }
      }
      for (const format of FORMATS) {
        for (const compress of COMPRESS) {
          for (const block of BLOCKS) {
            for (const t of targets) await ch.command({ query: `TRUNCATE TABLE ${t}` });
            await settle();
            const s0 = cpuSeconds(server.pid);
            const c0 = process.cpuUsage();
            let bytes = 0;
            const t0 = performance.now();
            for (let done = 0; done < RECORDS; done += block) {
              const n = Math.min(block, RECORDS - done);
              const slice = rows.slice(0, n);
              let body = format === 'RowBinary' ? rowBinary(slice) : jsonLines(slice);
              if (compress === 'gzip') body = await gzip(body, { level: 1 });
              bytes += body.length;
              const params = new URLSearchParams({
                database: cfg.clickhouse.database,
                query: `INSERT INTO ${TABLES.requests} (${COLUMN_LIST}) FORMAT ${format}`,
                insert_deduplicate: '1',
                insert_deduplication_token: `bench:${++token}`,
                deduplicate_blocks_in_dependent_materialized_views: '1',
                max_partitions_per_insert_block: '0',
                date_time_input_format: 'best_effort',
                input_format_json_throw_on_bad_escape_sequence: '0',
              });
              const res = await fetch(`${server.url}/?${params}`, {
                method: 'POST',
                body,
                headers: compress === 'gzip' ? { 'content-encoding': 'gzip' } : {},
              });
              if (!res.ok) throw new Error(`insert: ${res.status} ${(await res.text()).slice(0, 400)}`);
              await res.arrayBuffer();
            }
            const seconds = (performance.now() - t0) / 1000;
            const c = process.cpuUsage(c0);
            const s1 = cpuSeconds(server.pid);
            await settle();
            const s2 = cpuSeconds(server.pid);
            const res: Result = {
              format,
              compress,
              views: viewMode,
              block,
              records: RECORDS,
              recordsPerSec: Math.round(RECORDS / seconds),
              clientCpuUsPerRecord: round(((c.user + c.system) / RECORDS) * 1),
              serverCpuUsPerRecord: round(((s1 - s0) / RECORDS) * 1e6),
              serverCpuWithMergesUsPerRecord: round(((s2 - s0) / RECORDS) * 1e6),
              bodyBytesPerRecord: Math.round(bytes / RECORDS),
            };
            results.push(res);
            console.log(JSON.stringify(res));
          }
        }
      }
    }
    if (DISK_RECORDS > 0) {
      // Disk per stored record: distinct records, RowBinary, merged to one part per table.
      for (const t of targets) await ch.command({ query: `TRUNCATE TABLE ${t}` });
      for (let done = 0; done < DISK_RECORDS; done += 20_000) {
        const block: RequestRow[] = [];
        for (let i = 0; i < Math.min(20_000, DISK_RECORDS - done); i++)
          block.push(toRow(stored(done + i), 0, i));
        const params = new URLSearchParams({
          database: cfg.clickhouse.database,
          query: `INSERT INTO ${TABLES.requests} (${COLUMN_LIST}) FORMAT RowBinary`,
          max_partitions_per_insert_block: '0',
        });
        const res = await fetch(`${server.url}/?${params}`, { method: 'POST', body: rowBinary(block) });
        if (!res.ok) throw new Error(`insert: ${res.status} ${(await res.text()).slice(0, 400)}`);
        await res.arrayBuffer();
      }
      for (const t of targets) await ch.command({ query: `OPTIMIZE TABLE ${t} FINAL` });
      const parts = await (
        await ch.query({
          query: `SELECT table, sum(rows) AS rows, sum(bytes_on_disk) AS disk, sum(data_uncompressed_bytes) AS raw
                  FROM system.parts WHERE active AND database = currentDatabase() GROUP BY table ORDER BY disk DESC`,
          format: 'JSONEachRow',
        })
      ).json<{ table: string; rows: string; disk: string; raw: string }>();
      console.log(
        `\ndisk per stored record (${DISK_RECORDS} distinct records, one part per table after OPTIMIZE FINAL):`,
      );
      let total = 0;
      for (const p of parts) {
        total += Number(p.disk);
        console.log(
          `  ${p.table.padEnd(24)} rows ${String(p.rows).padStart(9)}  on disk ${(Number(p.disk) / DISK_RECORDS).toFixed(1).padStart(8)} B/record  uncompressed ${(Number(p.raw) / DISK_RECORDS).toFixed(1).padStart(8)} B/record  ratio ${(Number(p.raw) / Math.max(1, Number(p.disk))).toFixed(1)}`,
        );
      }
      console.log(
        `  all tables: ${(total / DISK_RECORDS).toFixed(1)} B/record → ${(((total / DISK_RECORDS) * 1e9) / 1024 ** 4).toFixed(2)} TiB per billion records`,
      );
    }

    console.log(
      '\nformat      gzip  views    block   rec/s  client µs  server µs  +merges µs  total µs  bytes/rec',
    );
    for (const x of results) {
      console.log(
        [
          x.format.padEnd(11),
          x.compress.padEnd(5),
          x.views.padEnd(8),
          String(x.block).padStart(6),
          String(x.recordsPerSec).padStart(7),
          x.clientCpuUsPerRecord.toFixed(1).padStart(10),
          x.serverCpuUsPerRecord.toFixed(1).padStart(10),
          x.serverCpuWithMergesUsPerRecord.toFixed(1).padStart(11),
          (x.clientCpuUsPerRecord + x.serverCpuWithMergesUsPerRecord).toFixed(1).padStart(9),
          String(x.bodyBytesPerRecord).padStart(10),
        ].join(' '),
      );
    }
    await ch.close();
  } finally {
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function round(x: number): number {
  return Math.round(x * 10) / 10;
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
