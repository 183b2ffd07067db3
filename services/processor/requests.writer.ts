import type { ClickHouseClient } from '../shared/clickhouse.js';
import { TABLES } from '../shared/tables.js';
import type { RequestRow } from './row.mapper.js';

export interface OffsetRange {
  min: number;
  max: number;
}

type RawInsert = (params: {
  table: string;
  values: Buffer;
  format: 'JSONEachRow';
  settings: Record<string, string | number>;
}) => Promise<unknown>;

/**
 * chDB's zero-copy insert (the payload Buffer goes to the engine as is), when the client runs on
 * chDB. The client's own insert path hands chDB one SQL string of the whole block (Buffer → string
 * → native copy on the event loop): measured 40% more CPU per record (test/bench/hot-paths.ts).
 * NOTE: @clickhouse/client keeps its connection in a TypeScript-private field; `chdb/connection`
 * exposes the raw insert there as `.chdb.rawInsert`. A ClickHouse server has neither: undefined.
 */
function chdbRawInsert(ch: ClickHouseClient): RawInsert | undefined {
  const ext = (ch as unknown as { connection?: { chdb?: { rawInsert?: RawInsert } } }).connection?.chdb;
  return typeof ext?.rawInsert === 'function' ? ext.rawInsert.bind(ext) : undefined;
}

/**
 * Writes request rows and the per-partition offset state. Each insert carries a deduplication
 * token derived from its Kafka offset range, so re-sending the same range after a crash is a no-op
 * in the raw table and in every materialized view (see ARCHITECTURE.md, delivery guarantees).
 */
export class RequestsWriter {
  private readonly rawInsert: RawInsert | undefined;

  constructor(private readonly ch: ClickHouseClient) {
    this.rawInsert = chdbRawInsert(ch);
  }

  static token(topic: string, partition: number, range: OffsetRange): string {
    return `${topic}:${partition}:${range.min}-${range.max}`;
  }

  /**
   * One JSONEachRow insert of a block, with the deduplication token of its offset range.
   * On chDB the lines are built here (`jsonEachRow`: the `record` column, already the JSON text of
   * an object, is written as a raw object and read back as a string with
   * `input_format_json_read_objects_as_strings` instead of being JSON-escaped a second time) and
   * handed over as one Buffer. Measured per record (test/bench/hot-paths.ts, bench/README.md):
   * 94 CPU µs instead of 147 through the client's insert. On a ClickHouse server the client's
   * insert is kept: that path was not measured here.
   */
  async insert(rows: RequestRow[], token: string): Promise<void> {
    if (rows.length === 0) return;
    const settings = {
      insert_deduplicate: 1,
      insert_deduplication_token: token,
      deduplicate_blocks_in_dependent_materialized_views: 1,
      date_time_input_format: 'best_effort',
      // NOTE: a lone UTF-16 surrogate in any string (`"\ud800"`, valid JSON, accepted by ingest)
      // otherwise fails the whole insert on every retry and blocks the partition; kept as text.
      input_format_json_throw_on_bad_escape_sequence: 0,
      // NOTE: `requests` is partitioned by day; one ingest call may carry records of 101 days
      // (a backfill, or on purpose), and ClickHouse's default limit of 100 partitions per insert
      // then refuses the block on every retry, blocking the partition.
      max_partitions_per_insert_block: '0',
      async_insert: 0,
    } as const;
    if (this.rawInsert) {
      await this.rawInsert({
        table: TABLES.requests,
        values: Buffer.from(jsonEachRow(rows)),
        format: 'JSONEachRow',
        settings: { ...settings, input_format_json_read_objects_as_strings: 1 },
      });
      return;
    }
    await this.ch.insert({
      table: TABLES.requests,
      values: rows,
      format: 'JSONEachRow',
      clickhouse_settings: settings,
    });
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

/** JSONEachRow text of rows whose `record` is the JSON text of an object, written unescaped. */
export function jsonEachRow(rows: RequestRow[]): string {
  let out = '';
  for (const { record, ...rest } of rows) {
    const head = JSON.stringify(rest);
    out += `${head.slice(0, -1)},"record":${record}}\n`;
  }
  return out;
}

/** ClickHouse errors caused by the data itself, which no retry can fix. */
export function isDataError(err: unknown): boolean {
  const msg = (err as { message?: string } | undefined)?.message ?? '';
  return /Cannot parse|Cannot read|escape sequence|Type mismatch|Unknown field|Illegal|out of range|too large|Incorrect data|CANNOT_PARSE|INCORRECT_DATA|ILLEGAL_TYPE/i.test(
    msg,
  );
}
