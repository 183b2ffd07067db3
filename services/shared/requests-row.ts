/**
 * The layout of the ClickHouse `requests` table (infra/clickhouse/migrations/001_requests.sql), in
 * one place: its columns in table order with their types as ClickHouse reports them
 * (`system.columns`). The processor's insert column list, the `file()` structure of its RowBinary
 * blocks, the RowBinary encoder (services/processor/row-binary.ts) and the `RequestRow` type are
 * derived from it, and the API names the columns it reads through `requestsColumns`.
 * test/integration/requests-row-layout.test.ts checks it against the table the migrations build.
 */

/** The TypeScript value of each ClickHouse type a `requests` column has (the RowBinary encoder has one writer per type). */
export interface RequestsColumnValues {
  String: string;
  'LowCardinality(String)': string;
  UInt8: number;
  UInt16: number;
  UInt64: number;
  /** epoch milliseconds (RowBinary writes DateTime64(3) as an Int64 of them) */
  "DateTime64(3, 'UTC')": number;
  'Nullable(Float64)': number | null;
  'Map(String, String)': Record<string, string>;
}
export type RequestsColumnType = keyof RequestsColumnValues;

export interface RequestsColumn {
  /** the column's name in ClickHouse */
  readonly name: string;
  /** its type, spelled as `system.columns.type` spells it */
  readonly type: RequestsColumnType;
  /** the `RequestRow` property holding its value, when it differs from `name` */
  readonly field?: string;
  /** a `DEFAULT` expression: ClickHouse fills the column, the processor does not write it */
  readonly default?: string;
  readonly codec?: string;
  /** a String column whose value may also be its UTF-8 bytes (written as they are) */
  readonly bytes?: true;
}

export const REQUESTS_COLUMNS = [
  { name: 'account_sid', type: 'LowCardinality(String)' },
  { name: 'bucket_sid', type: 'LowCardinality(String)' },
  { name: 'sid', type: 'String' },
  { name: 'environment_sid', type: 'LowCardinality(String)' },
  { name: 'context_sid', type: 'String' },
  { name: 'direction', type: 'LowCardinality(String)' },
  { name: 'created_at', type: "DateTime64(3, 'UTC')", field: 'created_at_ms' },
  { name: 'received_at', type: "DateTime64(3, 'UTC')", field: 'received_at_ms' },
  { name: 'stored_at', type: "DateTime64(3, 'UTC')", default: 'now64(3)' },
  { name: 'method', type: 'LowCardinality(String)' },
  { name: 'host', type: 'String' },
  { name: 'path', type: 'String' },
  { name: 'endpoint', type: 'String' },
  { name: 'status_code', type: 'UInt16' },
  { name: 'duration', type: 'Nullable(Float64)' },
  { name: 'request_size', type: 'UInt64' },
  { name: 'response_size', type: 'UInt64' },
  { name: 'blocked', type: 'UInt8' },
  { name: 'tags', type: 'Map(String, String)' },
  { name: 'record', type: 'String', codec: 'ZSTD(1)', bytes: true },
  { name: 'kafka_partition', type: 'UInt16' },
  { name: 'kafka_offset', type: 'UInt64' },
  // The call's consumer (007_consumers.sql): '' when none is identified.
  { name: 'consumer_id', type: 'String' },
  { name: 'consumer_name', type: 'String' },
  { name: 'consumer_group', type: 'LowCardinality(String)' },
] as const satisfies readonly RequestsColumn[];

type Column = (typeof REQUESTS_COLUMNS)[number];
export type RequestsColumnName = Column['name'];
/** The columns the processor writes, in table order (those ClickHouse fills are left out). */
type Inserted = Exclude<Column, { default: string }>;
type FieldOf<C> = C extends { field: infer F extends string } ? F : C extends { name: infer N } ? N : never;
type ValueOf<C extends Inserted> = C extends { bytes: true }
  ? string | Buffer
  : RequestsColumnValues[C['type']];
type InsertedValues = { [C in Inserted as FieldOf<C>]: ValueOf<C> };

/**
 * A row as the processor writes it: one property per inserted column (`field`, else its name),
 * plus the two instants as received, ISO text for the JSON formats of benchmarks and tools.
 */
export interface RequestRow extends InsertedValues {
  created_at: string;
  received_at: string;
}

/** An inserted column with the `RequestRow` property it is read from. */
export interface InsertedColumn {
  readonly name: RequestsColumnName;
  readonly type: RequestsColumnType;
  readonly field: keyof RequestRow;
  readonly bytes: boolean;
}

export const REQUESTS_INSERTED: readonly InsertedColumn[] = REQUESTS_COLUMNS.filter(
  (c): c is Inserted => !('default' in c),
).map((c) => ({
  name: c.name,
  type: c.type,
  field: 'field' in c ? c.field : c.name,
  bytes: 'bytes' in c,
}));

/** The insert's column list, in RowBinary order. */
export const REQUESTS_INSERT_COLUMNS = REQUESTS_INSERTED.map((c) => c.name).join(', ');

/**
 * The structure of a RowBinary block for `file(…, RowBinary, '<structure>')`, ready to sit in a
 * quoted SQL string. LowCardinality(String) is read as String (the same bytes), and the insert
 * converts it.
 */
export const REQUESTS_INSERT_STRUCTURE = REQUESTS_INSERTED.map(
  (c) => `${c.name} ${c.type.replace(/^LowCardinality\((.*)\)$/, '$1').replaceAll("'", "\\'")}`,
).join(', ');

/** A comma-separated list of `requests` columns for a query; a name the table lacks is a type error. */
export function requestsColumns(...names: RequestsColumnName[]): string {
  return names.join(', ');
}

/**
 * The columns a deleted request's row is copied into `requests_deleted` with (002_metrics.sql):
 * the ones its materialized views subtract from the metrics, in that table's order.
 */
export const REQUESTS_DELETED_COLUMNS = requestsColumns(
  'account_sid',
  'bucket_sid',
  'environment_sid',
  'created_at',
  'method',
  'endpoint',
  'status_code',
  'duration',
  'request_size',
  'response_size',
  'blocked',
  'consumer_id',
);
