import type { RequestRow } from '../../services/processor/row.mapper.js';

/**
 * The processor's earlier insert payload, kept for A/B runs (hot-paths.ts, ch-decompose.ts):
 * JSONEachRow text of rows whose `record` (the JSON text of an object) is written unescaped, read
 * back as a string with `input_format_json_read_objects_as_strings`.
 */
export function jsonEachRow(rows: RequestRow[]): string {
  let out = '';
  for (const { record, created_at_ms: _c, received_at_ms: _r, ...rest } of rows) {
    const head = JSON.stringify(rest);
    out += `${head.slice(0, -1)},"record":${record}}\n`;
  }
  return out;
}
