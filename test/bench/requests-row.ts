/**
 * CPU of the processor's row building and RowBinary encoding, in one process, rounds interleaved
 * so both variants see the same machine load: `toRow` of parsed records (the record's line kept, as
 * for an unchanged record) and `rowBinary` of 4,000-row blocks, against a reference encoder that
 * writes the columns in a fixed, hand-written order. The bytes of both encoders are compared first:
 * any difference stops the run.
 *
 *   npx tsx test/bench/requests-row.ts [records=20000] [rounds=15]
 */
import type { StoredRecord } from '../../services/processor/pipeline.js';
import { RowBinary } from '../../services/processor/row-binary.js';
import { rowBinary, toRow, type RequestRow } from '../../services/processor/row.mapper.js';
import { processorRecords } from './ch-scratch.js';

const N = Number(process.argv[2] ?? 20_000);
const ROUNDS = Number(process.argv[3] ?? 15);
const BLOCK = 4_000;

/** The reference: each column written by a line of its own, in the `requests` table's order. */
function referenceRowBinary(rows: RequestRow[]): Buffer {
  let estimate = 0;
  for (const r of rows) estimate += r.record.length + 512;
  const w = new RowBinary(estimate);
  for (const r of rows) {
    w.string(r.account_sid);
    w.string(r.bucket_sid);
    w.string(r.sid);
    w.string(r.environment_sid);
    w.string(r.context_sid);
    w.string(r.direction);
    w.i64(r.created_at_ms);
    w.i64(r.received_at_ms);
    w.string(r.method);
    w.string(r.host);
    w.string(r.path);
    w.string(r.endpoint);
    w.u16(r.status_code);
    w.nullableF64(r.duration);
    w.u64(r.request_size);
    w.u64(r.response_size);
    w.u8(r.blocked);
    w.map(r.tags);
    if (typeof r.record === 'string') w.string(r.record);
    else w.utf8(r.record);
    w.u16(r.kafka_partition);
    w.u64(r.kafka_offset);
  }
  return w.bytes();
}

function cpuUs(fn: () => void): number {
  const c0 = process.cpuUsage();
  fn();
  const c = process.cpuUsage(c0);
  return c.user + c.system;
}

function main(): void {
  const lines = processorRecords(N, { account: 'acc_rowbench' }).map((r) => Buffer.from(JSON.stringify(r)));
  const parsed = lines.map((l) => JSON.parse(l.toString('utf8')) as StoredRecord);
  const rows = parsed.map((r, i) => toRow(r, 3, i, lines[i]));
  const blocks: RequestRow[][] = [];
  for (let i = 0; i < rows.length; i += BLOCK) blocks.push(rows.slice(i, i + BLOCK));
  // Half of the rows with the record serialised (a record a step changed): both `record` forms.
  const mixed = parsed.map((r, i) => toRow(r, 3, i, i % 2 ? lines[i] : undefined));
  for (const b of [rows, mixed]) {
    if (!Buffer.from(rowBinary(b)).equals(referenceRowBinary(b)))
      throw new Error('rowBinary and the reference encoder write different bytes');
  }
  let sink = 0;
  const runs: Record<'toRow' | 'encode' | 'reference', number[]> = { toRow: [], encode: [], reference: [] };
  // Two untimed warm-up rounds, then the timed ones, the two encoders alternating first.
  for (let round = -2; round < ROUNDS; round++) {
    const t = cpuUs(() => {
      for (let i = 0; i < parsed.length; i++) sink += toRow(parsed[i]!, 3, i, lines[i]).request_size;
    });
    const encode = () => cpuUs(() => blocks.forEach((b) => (sink += rowBinary(b).length)));
    const reference = () => cpuUs(() => blocks.forEach((b) => (sink += referenceRowBinary(b).length)));
    let e: number;
    let r: number;
    if (round % 2 === 0) {
      e = encode();
      r = reference();
    } else {
      r = reference();
      e = encode();
    }
    if (round < 0) continue;
    runs.toRow.push(t / N);
    runs.encode.push(e / N);
    runs.reference.push(r / N);
  }
  const stats = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    return `median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(3)}  min ${sorted[0]!.toFixed(3)}`;
  };
  const bytes = blocks.reduce((s, b) => s + rowBinary(b).length, 0) / N;
  console.log(
    `records ${N} (${bytes.toFixed(0)} RowBinary bytes each), rounds ${ROUNDS}, CPU µs per record:`,
  );
  console.log(`  toRow (line kept):                    ${stats(runs.toRow)}`);
  console.log(`  rowBinary (${BLOCK}-row blocks):         ${stats(runs.encode)}`);
  console.log(`  reference encoder (${BLOCK}-row blocks): ${stats(runs.reference)}`);
  if (sink < 0) console.log(sink);
}

main();
