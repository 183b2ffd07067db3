/**
 * Where the ClickHouse limit's CPU goes, and A/B of the processor's insert paths: the same blocks
 * as limit (a) (2.5 KB records, the project's migrations and materialized views), rounds
 * interleaved; CPU µs per record of the whole process (Node + chDB threads), waiting for merges to
 * finish before each insert.
 *
 *   npx tsx test/bench/ch-decompose.ts [block=20000] [blocks=4]
 *
 * Variants: chDB's raw insert of JSONEachRow text (the processor's insert until 2026-11-22, S2),
 * the same lines read by `file()` from a spool file, the writer's RowBinary through `file()`
 * (current), and the same RowBinary into a copy of `requests` without materialized views and into
 * a Null table (parsing only).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { StoredRecord } from '../../services/processor/pipeline.js';
import { RequestsWriter } from '../../services/processor/requests.writer.js';
import { rowBinary, toRow } from '../../services/processor/row.mapper.js';
import { ROOT } from './bench-stack.js';
import { cpuMs, noMerges, processorRecords, scratchClickHouse } from './ch-scratch.js';
import { jsonEachRow } from './legacy-insert.js';

const BLOCK = Number(process.argv[2] ?? 20_000);
const BLOCKS = Number(process.argv[3] ?? 4);
const ch = await scratchClickHouse('ch-decompose');
const writer = new RequestsWriter(ch);
const raw = (ch as unknown as { connection: { chdb: { rawInsert: (p: unknown) => Promise<unknown> } } })
  .connection.chdb;
await ch.command({ query: 'CREATE TABLE req_nomv AS requests' });
await ch.command({ query: 'CREATE TABLE req_null AS requests ENGINE = Null' });

const pool = processorRecords(20000).map((r) => JSON.stringify(r));
const spool = fs.mkdtempSync(path.join(fs.existsSync('/dev/shm') ? '/dev/shm' : ROOT, 'tapline-decompose-'));
process.once('exit', () => fs.rmSync(spool, { recursive: true, force: true }));

const cpu = () => cpuMs() * 1000;
const idle = () => noMerges(ch);
const totals = new Map<string, number[]>();
const add = (k: string, us: number) => {
  const a = totals.get(k) ?? [];
  a.push(us / BLOCK);
  totals.set(k, a);
};
const S = {
  insert_deduplicate: 1,
  deduplicate_blocks_in_dependent_materialized_views: 1,
  date_time_input_format: 'best_effort',
  input_format_json_throw_on_bad_escape_sequence: 0,
  max_partitions_per_insert_block: '0',
  async_insert: 0,
  input_format_json_read_objects_as_strings: 1,
} as const;
const JSON_STRUCTURE =
  "account_sid String, bucket_sid String, sid String, environment_sid String, context_sid String, direction String, created_at DateTime64(3, \\'UTC\\'), received_at DateTime64(3, \\'UTC\\'), method String, host String, path String, endpoint String, status_code UInt16, duration Nullable(Float64), request_size UInt64, response_size UInt64, blocked UInt8, tags Map(String, String), kafka_partition UInt16, kafka_offset UInt64, record String";
const JSON_COLUMNS = JSON_STRUCTURE.split(', ')
  .map((c) => c.split(' ')[0]!)
  .filter((c) => /^[a-z_]+$/.test(c));
const ROWBINARY_STRUCTURE = JSON_STRUCTURE.replace(
  ', kafka_partition UInt16, kafka_offset UInt64, record String',
  ', record String, kafka_partition UInt16, kafka_offset UInt64',
);

let offset = 0;
for (let b = 0; b < BLOCKS; b++) {
  const fresh = () => pool.slice(0, BLOCK).map((p, i) => toRow(JSON.parse(p) as StoredRecord, 0, offset + i));
  let c0 = cpu();
  const rows = fresh();
  add('js toRow (JSON.stringify of the record)', cpu() - c0);

  await idle();
  c0 = cpu();
  await raw.rawInsert({
    table: 'requests',
    values: Buffer.from(jsonEachRow(rows)),
    format: 'JSONEachRow',
    settings: { ...S, insert_deduplication_token: `raw${offset}` },
  });
  add('A chDB raw insert, JSONEachRow (incl. lines)', cpu() - c0);

  const rowsB = fresh();
  const rowsC = fresh();
  await idle();
  c0 = cpu();
  const f = path.join(spool, `${offset}.jsonl`);
  await fs.promises.writeFile(f, jsonEachRow(rowsB));
  await ch.command({
    query: `INSERT INTO requests (${JSON_COLUMNS.join(', ')}) SELECT * FROM file('${f}', JSONEachRow, '${JSON_STRUCTURE}')`,
    clickhouse_settings: { ...S, insert_deduplication_token: `jf${offset}` },
  });
  fs.rmSync(f);
  add('B file(), JSONEachRow (incl. lines)', cpu() - c0);

  await idle();
  c0 = cpu();
  await writer.insert(rowsC, `w${offset}`);
  add('C writer: file(), RowBinary (incl. encode)', cpu() - c0);
  c0 = cpu();
  const bin = rowBinary(rows);
  add('  of which JS RowBinary encoding', cpu() - c0);

  for (const table of ['req_nomv', 'req_null']) {
    await idle();
    const g = path.join(spool, `${offset}.rowbinary`);
    await fs.promises.writeFile(g, bin);
    c0 = cpu();
    await ch.command({
      query: `INSERT INTO ${table} (${ROWBINARY_STRUCTURE.split(', ')
        .map((c) => c.split(' ')[0]!)
        .filter((c) => /^[a-z_]+$/.test(c))
        .join(', ')}) SELECT * FROM file('${g}', RowBinary, '${ROWBINARY_STRUCTURE}')`,
      clickhouse_settings: { ...S, insert_deduplication_token: `${table}${offset}` },
    });
    add(
      `  RowBinary into ${table === 'req_nomv' ? 'requests without its views' : 'a Null table'}`,
      cpu() - c0,
    );
    fs.rmSync(g);
  }
  offset += BLOCK;
}
console.log(`block ${BLOCK}, ${BLOCKS} blocks, CPU µs per record (each block)`);
for (const [k, v] of totals) console.log(k.padEnd(48), v.map((x) => x.toFixed(1)).join('  '));
await ch.close();
