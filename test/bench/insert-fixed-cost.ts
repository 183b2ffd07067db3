/**
 * The fixed CPU cost of one processor insert on chDB, apart from the rows: tiny blocks (10 records)
 * through each step of a block's write, process CPU (Node + chDB threads) per operation, median of
 * N rounds after merges settle.
 *
 *   npx tsx test/bench/insert-fixed-cost.ts [rounds=20] [rows=10]
 */
import fs from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { createClickHouse, migrateClickHouse } from '../../services/shared/clickhouse.js';
import { newSid } from '../../services/shared/ids.js';
import type { StoredRecord } from '../../services/processor/pipeline.js';
import {
  COLUMN_LIST,
  RequestsWriter,
  rowBinary,
  STRUCTURE,
} from '../../services/processor/requests.writer.js';
import { toRow } from '../../services/processor/row.mapper.js';
import { endpointTemplate } from '../../services/processor/steps/endpoint.step.js';
import { ROOT } from './bench-stack.js';
import { ingestRecord, rng } from './records.js';

const ROUNDS = Number(process.argv[2] ?? 20);
const ROWS = Number(process.argv[3] ?? 10);
const dir = path.join(ROOT, '.cache', 'insert-fixed-cost');
fs.rmSync(dir, { recursive: true, force: true });
const chCfg = {
  url: undefined,
  path: dir,
  database: 'tapline',
  user: 'default',
  password: '',
  retentionDays: 30,
};
const ch = createClickHouse(chCfg);
await migrateClickHouse(ch, chCfg, pino({ level: 'warn' }));
const writer = new RequestsWriter(ch);
await ch.command({ query: 'CREATE TABLE req_nomv AS requests' });

const r = rng(7);
const receivedAt = new Date().toISOString();
let offset = 0;
const block = () =>
  Array.from({ length: ROWS }, () => {
    const rec = ingestRecord(r, { environments: ['prod01', 'stag01', 'dev001'] });
    Object.assign(rec, {
      sid: newSid('request'),
      accountSid: 'acc_x',
      bucketSid: 'bkt_x0',
      receivedAt,
      contextSid: null,
      firewall: { blocked: false },
      endpoint: endpointTemplate(String((rec.request as Record<string, unknown>).path)),
    });
    return toRow(rec as unknown as StoredRecord, 0, offset++);
  });
const cpu = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};
async function idle(): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const rs = await ch.query({ query: 'SELECT count() AS n FROM system.merges', format: 'JSONEachRow' });
    const [row] = await rs.json<{ n: number }>();
    if (Number(row!.n) === 0) return;
    await new Promise((res) => setTimeout(res, 100));
  }
}
const ops: [string, () => Promise<unknown>][] = [
  ['SELECT 1', () => ch.query({ query: 'SELECT 1', format: 'JSONEachRow' }).then((x) => x.json())],
  ['saveRange (1 row, processor_offsets)', () => writer.saveRange('t', 0, { min: offset, max: offset + 1 })],
  ['writer.insert, requests + 2 views', () => writer.insert(block(), `tok${offset}`)],
  [
    'same, no dedup token/settings',
    async () => {
      const rows = block();
      const f = path.join('/dev/shm', `ifc-${offset}.rb`);
      fs.writeFileSync(f, rowBinary(rows));
      await ch.command({
        query: `INSERT INTO requests (${COLUMN_LIST}) SELECT * FROM file('${f}', RowBinary, '${STRUCTURE}')`,
      });
      fs.rmSync(f);
    },
  ],
  ...(
    [
      ['enable_analyzer 0', { enable_analyzer: 0 }],
      ['max_threads 1', { max_threads: 1 }],
      ['implicit projections off', { optimize_use_implicit_projections: 0 }],
      ['max_insert_threads 1 + max_threads 1', { max_threads: 1, max_insert_threads: 1 }],
      ['analyzer 0 + max_threads 1', { enable_analyzer: 0, max_threads: 1 }],
    ] as [string, Record<string, unknown>][]
  ).map(
    ([name, extra]) =>
      [
        `views, ${name}`,
        async () => {
          const rows = block();
          const f = path.join('/dev/shm', `ifc-${offset}.rb`);
          fs.writeFileSync(f, rowBinary(rows));
          await ch.command({
            query: `INSERT INTO requests (${COLUMN_LIST}) SELECT * FROM file('${f}', RowBinary, '${STRUCTURE}')`,
            clickhouse_settings: {
              insert_deduplicate: 1,
              insert_deduplication_token: `v${offset}`,
              deduplicate_blocks_in_dependent_materialized_views: 1,
              ...extra,
            },
          });
          fs.rmSync(f);
        },
      ] as [string, () => Promise<unknown>],
  ),
  [
    'requests without views',
    async () => {
      const rows = block();
      const f = path.join('/dev/shm', `ifc-${offset}.rb`);
      fs.writeFileSync(f, rowBinary(rows));
      await ch.command({
        query: `INSERT INTO req_nomv (${COLUMN_LIST}) SELECT * FROM file('${f}', RowBinary, '${STRUCTURE}')`,
        clickhouse_settings: { insert_deduplicate: 1, insert_deduplication_token: `n${offset}` },
      });
      fs.rmSync(f);
    },
  ],
];
const res = new Map<string, number[]>();
for (let i = 0; i < ROUNDS; i++) {
  for (const [name, op] of ops) {
    await idle();
    const c0 = cpu();
    await op();
    const a = res.get(name) ?? [];
    a.push(cpu() - c0);
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
