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

  async insert(rows: RequestRow[], token: string): Promise<void> {
    if (rows.length === 0) return;
    await this.ch.insert({
      table: TABLES.requests,
      values: rows,
      format: 'JSONEachRow',
      clickhouse_settings: {
        insert_deduplicate: 1,
        insert_deduplication_token: token,
        deduplicate_blocks_in_dependent_materialized_views: 1,
        date_time_input_format: 'best_effort',
        async_insert: 0,
      },
    });
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
