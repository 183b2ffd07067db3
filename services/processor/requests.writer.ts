import { Readable } from 'node:stream';
import type { ClickHouseClient } from '../shared/clickhouse.js';
import { TABLES } from '../shared/tables.js';
import type { RequestRow } from './row.mapper.js';

export interface OffsetRange {
  min: number;
  max: number;
}

/**
 * Writes request rows and the per-partition offset state. Each insert carries a deduplication
 * token derived from its Kafka offset range, so re-sending the same range after a crash is a no-op
 * in the raw table and in every materialized view (see ARCHITECTURE.md, delivery guarantees).
 */
export class RequestsWriter {
  constructor(private readonly ch: ClickHouseClient) {}

  static token(topic: string, partition: number, range: OffsetRange): string {
    return `${topic}:${partition}:${range.min}-${range.max}`;
  }

  /**
   * One JSONEachRow insert of a block. The lines are built here rather than by the client: the
   * `record` column is already the JSON text of an object (row.mapper.ts), so it is written as a
   * raw object and read back as a string (`input_format_json_read_objects_as_strings`) instead of
   * being JSON-escaped a second time — measured in test/bench (bench/README.md): the client's
   * per-row JSON.stringify was the largest single cost per record in the service.
   */
  async insert(rows: RequestRow[], token: string): Promise<void> {
    if (rows.length === 0) return;
    const result = await this.ch.exec({
      query: `INSERT INTO ${TABLES.requests} FORMAT JSONEachRow`,
      values: Readable.from([jsonEachRow(rows)], { objectMode: false }),
      clickhouse_settings: {
        insert_deduplicate: 1,
        insert_deduplication_token: token,
        deduplicate_blocks_in_dependent_materialized_views: 1,
        date_time_input_format: 'best_effort',
        input_format_json_read_objects_as_strings: 1,
        // NOTE: a lone UTF-16 surrogate in any string (`"\ud800"`, valid JSON, accepted by ingest)
        // otherwise fails the whole insert on every retry and blocks the partition; kept as text.
        input_format_json_throw_on_bad_escape_sequence: 0,
        async_insert: 0,
      },
    });
    // NOTE: the answer must be consumed, or a ClickHouse server's HTTP connection is never reused.
    for await (const _ of result.stream) void _;
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
