/**
 * The fixed CPU cost of one processor insert on chDB, apart from the rows: tiny blocks (10 records)
 * through each step of a block's write, process CPU (Node + chDB threads) per operation, median of
 * N rounds after merges settle.
 *
 *   npx tsx test/bench/insert-fixed-cost.ts [rounds=20] [rows=10]
 */
import fs from 'node:fs';
import type { ClickHouseSettings } from '@clickhouse/client';
import path from 'node:path';
import { RequestsWriter } from '../../services/processor/requests.writer.js';
import { rowBinary, toRow } from '../../services/processor/row.mapper.js';
import {
  REQUESTS_INSERT_COLUMNS as COLUMN_LIST,
  REQUESTS_INSERT_STRUCTURE as STRUCTURE,
} from '../../services/shared/requests-row.js';
import { cpuMs, noMerges, processorRecords, scratchClickHouse } from './ch-scratch.js';

const ROUNDS = Number(process.argv[2] ?? 20);
const ROWS = Number(process.argv[3] ?? 10);
const ch = await scratchClickHouse('insert-fixed-cost');
const writer = new RequestsWriter(ch);
await ch.command({ query: 'CREATE TABLE req_nomv AS requests' });

let offset = 0;
const block = () => processorRecords(ROWS, { seed: offset + 1 }).map((r) => toRow(r, 0, offset++));
const idle = () => noMerges(ch);
/** A block written as the writer writes it, into `table`, with `settings` instead of the writer's. */
async function insertVia(table: string, settings: ClickHouseSettings): Promise<void> {
  const f = path.join('/dev/shm', `ifc-${process.pid}-${offset}.rb`);
  fs.writeFileSync(f, rowBinary(block()));
  try {
    await ch.command({
      query: `INSERT INTO ${table} (${COLUMN_LIST}) SELECT * FROM file('${f}', RowBinary, '${STRUCTURE}')`,
      clickhouse_settings: settings,
    });
  } finally {
    fs.rmSync(f);
  }
}
const dedup = (extra: ClickHouseSettings = {}): ClickHouseSettings => ({
  insert_deduplicate: 1,
  insert_deduplication_token: `v${offset}`,
  deduplicate_blocks_in_dependent_materialized_views: 1,
  ...extra,
});
const ops: [string, () => Promise<unknown>][] = [
  ['SELECT 1', () => ch.query({ query: 'SELECT 1', format: 'JSONEachRow' }).then((x) => x.json())],
  ['saveRange (1 row, processor_offsets)', () => writer.saveRange('t', 0, { min: offset, max: offset + 1 })],
  ['writer.insert, requests + 2 views', () => writer.insert(block(), `tok${offset}`)],
  ['same, no dedup token/settings', () => insertVia('requests', {})],
  ...(
    [
      ['max_threads 1', { max_threads: 1 }],
      ['implicit projections off', { optimize_use_implicit_projections: 0 }],
      ['max_insert_threads 1 + max_threads 1', { max_threads: 1, max_insert_threads: 1 }],
    ] as [string, ClickHouseSettings][]
  ).map(([name, extra]): [string, () => Promise<unknown>] => [
    `views, ${name}`,
    () => insertVia('requests', dedup(extra)),
  ]),
  ['requests without views', () => insertVia('req_nomv', dedup())],
];
const res = new Map<string, number[]>();
for (let i = 0; i < ROUNDS; i++) {
  for (const [name, op] of ops) {
    await idle();
    const c0 = cpuMs();
    await op();
    const a = res.get(name) ?? [];
    a.push(cpuMs() - c0);
    res.set(name, a);
  }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`${ROWS} rows per insert, ${ROUNDS} rounds: CPU ms per operation (median, min)`);
for (const [k, v] of res)
  console.log(
    k.padEnd(44),
    med(v).toFixed(1).padStart(7),
    Math.min(...v)
      .toFixed(1)
      .padStart(7),
  );
await ch.close();
