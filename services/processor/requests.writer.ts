import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { isChdb, type ClickHouseClient } from '../shared/clickhouse.js';
import { REQUESTS_INSERT_COLUMNS, REQUESTS_INSERT_STRUCTURE } from '../shared/requests-row.js';
import { metrics, secondsSince } from '../shared/metrics.js';
import { TABLES } from '../shared/tables.js';
import { noViewInsertLock, type ViewInsertLock } from '../shared/view-insert-lock.js';
import { rowBinary, type RequestRow } from './row.mapper.js';

export interface OffsetRange {
  min: number;
  max: number;
}

/**
 * Where the processor's insert blocks are spooled for chDB: RAM-backed /dev/shm when there is one,
 * else the temporary directory.
 */
export function spoolBase(): string {
  try {
    fs.accessSync('/dev/shm', fs.constants.W_OK);
    return '/dev/shm';
  } catch {
    return os.tmpdir();
  }
}

/**
 * A spool file for one insert block: `fd` to write it, `path` for chDB's `file()` to read it.
 * On Linux the file is unlinked as soon as it is open and chDB reads it through
 * `/proc/self/fd/<fd>` (a fresh open of the same file, from its start): nothing is left in
 * /dev/shm (RAM) when the process is killed mid-insert, and no other process can open it. Elsewhere
 * it is a named file (0600) in a private directory, removed after the insert and at exit.
 */
interface SpoolFile {
  fd: number;
  path: string;
  /** Closes the file and removes it if it still has a name. */
  release(): void;
}

let spooled = 0;

export class Spool {
  private dir: string | undefined;

  constructor(private readonly base: string) {
    if (!/^[\w/.-]+$/.test(base)) throw new Error(`unusable spool directory ${base}`);
  }

  open(): SpoolFile {
    if (process.platform === 'linux') {
      const name = path.join(
        this.base,
        `tapline-insert-${process.pid}-${++spooled}-${randomBytes(6).toString('hex')}`,
      );
      const fd = fs.openSync(name, 'wx', 0o600);
      fs.unlinkSync(name);
      return { fd, path: `/proc/self/fd/${fd}`, release: () => fs.closeSync(fd) };
    }
    const file = path.join(this.directory(), `${process.pid}-${++spooled}.rowbinary`);
    const fd = fs.openSync(file, 'wx', 0o600);
    return {
      fd,
      path: file,
      release: () => {
        fs.closeSync(fd);
        fs.rmSync(file, { force: true });
      },
    };
  }

  private directory(): string {
    if (this.dir) return this.dir;
    const dir = fs.mkdtempSync(path.join(this.base, 'tapline-insert-'));
    fs.chmodSync(dir, 0o700);
    process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
    if (!/^[\w/.-]+$/.test(dir)) throw new Error(`unusable spool directory ${dir}`);
    return (this.dir = dir);
  }
}

/**
 * Writes request rows and the per-partition offset state. Each insert carries a deduplication
 * token derived from its Kafka offset range, so re-sending the same range after a crash is a no-op
 * in the raw table and in every materialized view (docs/reliability.md).
 */
export class RequestsWriter {
  private readonly spool: Spool | undefined;

  /**
   * `lock`: what each insert holds against rebuild-metrics' table swaps on a ClickHouse server
   * (view-insert-lock.ts).
   */
  constructor(
    private readonly ch: ClickHouseClient,
    private readonly lock: ViewInsertLock = noViewInsertLock,
  ) {
    this.spool = isChdb(ch) ? new Spool(spoolBase()) : undefined;
  }

  static token(topic: string, partition: number, range: OffsetRange): string {
    return `${topic}:${partition}:${range.min}-${range.max}`;
  }

  /**
   * One insert of a block, with the deduplication token of its offset range.
   * On chDB the block is written as RowBinary to a spool file and inserted with
   * `INSERT … SELECT * FROM file(…, RowBinary)`: the cheapest of chDB's insert paths per record, as
   * `file()` reads RowBinary without parsing the `record` text (bench/README.md has the figures).
   */
  async insert(rows: RequestRow[], token: string): Promise<void> {
    if (rows.length === 0) return;
    const start = process.hrtime.bigint();
    try {
      await this.lock(() => this.insertRows(rows, token));
    } catch (err) {
      metrics.clickhouseInsert.observe({ table: TABLES.requests, outcome: 'failed' }, secondsSince(start));
      metrics.clickhouseInsertFailures.inc({
        table: TABLES.requests,
        kind: isDataError(err) ? 'data' : 'other',
      });
      throw err;
    }
    metrics.clickhouseInsert.observe({ table: TABLES.requests, outcome: 'ok' }, secondsSince(start));
  }

  private async insertRows(rows: RequestRow[], token: string): Promise<void> {
    const settings = {
      insert_deduplicate: 1,
      insert_deduplication_token: token,
      deduplicate_blocks_in_dependent_materialized_views: 1,
      // `requests` is partitioned by day; one ingest call may carry records of 101 days
      // (a backfill, or on purpose), and ClickHouse's default limit of 100 partitions per insert
      // then refuses the block on every retry, blocking the partition.
      max_partitions_per_insert_block: '0',
      async_insert: 0,
      // The views' GROUP BY already leaves one row per key in each block they write, so the
      // aggregating tables' merge of the inserted block finds nothing to combine but still copies
      // every row (with its duration histogram) once more. Queries always aggregate, and the
      // background merges combine rows as before. With a consumer on every record (seven rollup
      // rows per record) this is ~20 µs of chDB CPU per record (bench/README.md).
      optimize_on_insert: 0,
      // chDB reads the spooled block in chunks of 8,192 rows (a granule) that the insert then
      // squashes into one block, instead of one chunk grown by doubling to the whole block: ~17 MB
      // less working memory per insert of ~13,000 records (bench/README.md).
      max_block_size: '8192',
    } as const;
    if (this.spool) {
      const file = this.spool.open();
      try {
        // Written as it is encoded (synchronously: a RAM-backed file, and the encoding itself
        // holds the event loop as long), so the block's RowBinary is never in memory whole.
        rowBinary.toSink(rows, (bytes) => {
          for (let at = 0; at < bytes.length;) at += fs.writeSync(file.fd, bytes, at);
        });
        await this.ch.command({
          query: `INSERT INTO ${TABLES.requests} (${REQUESTS_INSERT_COLUMNS})
                  SELECT * FROM file('${file.path}', RowBinary, '${REQUESTS_INSERT_STRUCTURE}')`,
          clickhouse_settings: settings,
        });
      } finally {
        file.release();
      }
      return;
    }
    // On a server the same RowBinary bytes go in the HTTP body (the client has no RowBinary
    // insert, so through `exec` with the body as a stream), cheaper for both processes than the
    // client's JSONEachRow insert (test/bench/ch-server-insert.ts, bench/README.md).
    const res = await this.ch.exec({
      query: `INSERT INTO ${TABLES.requests} (${REQUESTS_INSERT_COLUMNS}) FORMAT RowBinary`,
      values: Readable.from([rowBinary(rows)]),
      clickhouse_settings: settings,
    });
    res.stream.resume();
    await finished(res.stream);
  }

  /**
   * Inserts a block; when ClickHouse refuses its data (a parse or type error that would fail on
   * every retry and block the partition), halves the block until the refused rows are isolated and
   * returns them for the dead-letter topic. Halves get tokens derived from the block's, so a replay
   * after a crash splits the same way and still deduplicates. Any other error is rethrown: the
   * block is retried, not committed.
   */
  async insertIsolating(rows: RequestRow[], token: string): Promise<{ row: RequestRow; reason: string }[]> {
    try {
      await this.insert(rows, token);
      return [];
    } catch (err) {
      if (!isDataError(err)) throw err;
      const reason = (err as Error).message.split('\n')[0]!.slice(0, 500);
      if (rows.length === 1) return [{ row: rows[0]!, reason }];
      const mid = Math.ceil(rows.length / 2);
      return [
        ...(await this.insertIsolating(rows.slice(0, mid), `${token}/a`)),
        ...(await this.insertIsolating(rows.slice(mid), `${token}/b`)),
      ];
    }
  }

  async saveRange(topic: string, partition: number, range: OffsetRange): Promise<void> {
    await this.ch.insert({
      table: TABLES.processorState,
      values: [{ topic, partition, min_offset: range.min, max_offset: range.max }],
      format: 'JSONEachRow',
    });
  }

  async loadRanges(topic: string): Promise<Map<number, OffsetRange>> {
    const rs = await this.ch.query({
      query: `SELECT partition, argMax(min_offset, max_offset) AS min, max(max_offset) AS max
              FROM ${TABLES.processorState} WHERE topic = {topic:String} GROUP BY partition`,
      query_params: { topic },
      format: 'JSONEachRow',
    });
    const rows = await rs.json<{ partition: number; min: number | string; max: number | string }>();
    return new Map(rows.map((r) => [Number(r.partition), { min: Number(r.min), max: Number(r.max) }]));
  }

  /** Whether any row of this offset range is stored (fallback when a range cannot be re-formed). */
  async rangeStored(partition: number, range: OffsetRange): Promise<boolean> {
    const rs = await this.ch.query({
      query: `SELECT count() AS n FROM ${TABLES.requests}
              WHERE kafka_partition = {p:UInt16} AND kafka_offset BETWEEN {a:UInt64} AND {b:UInt64}`,
      query_params: { p: partition, a: range.min, b: range.max },
      format: 'JSONEachRow',
    });
    const [row] = await rs.json<{ n: number | string }>();
    return Number(row?.n ?? 0) > 0;
  }
}

/** ClickHouse errors caused by the data itself, which no retry can fix. */
export function isDataError(err: unknown): boolean {
  const msg = (err as { message?: string } | undefined)?.message ?? '';
  return /Cannot parse|Cannot read|escape sequence|Type mismatch|Unknown field|Illegal|out of range|too large|Incorrect data|CANNOT_PARSE|INCORRECT_DATA|ILLEGAL_TYPE/i.test(
    msg,
  );
}
