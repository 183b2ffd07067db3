/**
 * chDB's CPU per record of the processor's inserts under a chosen set of ClickHouse migrations,
 * to see what a materialized view costs on every insert:
 *
 *   npx tsx test/bench/view-cost.ts 007|nokey|008|all [blocks = 20] [rows per block = 10000]
 *                                   [--consumers=N] [--drop=view,view] [--noweek]
 *
 * `007`: migrations up to 007 (the consumer columns and views); `nokey`: and 008 without
 * `requests_key_rollup_mv`; `008`: up to 008 (no duration moments, no week blocks); `all`: every
 * migration; `--noweek`: without 009's week level in consumers_rollup. `--consumers=N`: every record carries a
 * consumer among N (as test/bench/loadgen.ts picks them: a few busy, most rare); `--drop`: the
 * named materialized views are not created (what each one costs). A fresh chDB database in a temporary
 * directory each run; the blocks go through `RequestsWriter` as the processor's do; prints the
 * median and mean CPU µs per record of the inserts after the first two. Run the variants
 * alternated: one process holds one chDB engine.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { CH_MIGRATIONS_DIR, createClickHouse, migrateClickHouse } from '../../services/shared/clickhouse.js';
import { RequestsWriter } from '../../services/processor/requests.writer.js';
import { toRow } from '../../services/processor/row.mapper.js';
import { endpointTemplate } from '../../services/processor/steps/endpoint.step.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';
import { ingestRecord, rng } from './records.js';
const flags = process.argv.slice(2).filter((a) => a.startsWith('--'));
const [variant, blocksArg, rowsArg] = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const flag = (name: string) => flags.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const CONSUMERS = Number(flag('consumers') ?? 0);
const DROP = (flag('drop') ?? '').split(',').filter(Boolean);
if (!['007', 'nokey', '008', 'all'].includes(variant ?? ''))
  throw new Error('usage: view-cost.ts 007|nokey|008|all [blocks] [rows per block]');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'viewcost-'));
const mig = path.join(tmp, 'mig');
fs.mkdirSync(mig);
for (const f of fs.readdirSync(CH_MIGRATIONS_DIR)) {
  if (variant === '007' && f >= '008') continue;
  if (variant === '008' && f >= '009') continue;
  let sql = fs.readFileSync(path.join(CH_MIGRATIONS_DIR, f), 'utf8');
  if (variant === 'nokey' && f.startsWith('008'))
    sql = sql.slice(0, sql.indexOf('CREATE MATERIALIZED VIEW IF NOT EXISTS requests_key_rollup_mv'));
  if (flags.includes('--noweek')) sql = sql.replace(', 1440, 10080] AS lv', ', 1440] AS lv');
  for (const view of DROP) {
    const at = sql.indexOf(`CREATE MATERIALIZED VIEW IF NOT EXISTS ${view} `);
    if (at >= 0) sql = sql.slice(0, at) + sql.slice(sql.indexOf(';', at) + 1);
  }
  fs.writeFileSync(path.join(mig, f), sql);
}
const cfg = embeddedClickHouse(path.join(tmp, 'ch'));
const ch = createClickHouse(cfg);
await migrateClickHouse(ch, cfg, pino({ level: 'silent' }), undefined, mig);
const writer = new RequestsWriter(ch);
const r = rng(7);
const now = Date.now();
const B = Number(blocksArg ?? 20),
  N = Number(rowsArg ?? 10000);
let off = 0;
const per: number[] = [];
for (let b = 0; b < B; b++) {
  const rows = Array.from({ length: N }, (_, i) => {
    const rec = {
      ...ingestRecord(r, { environments: ['prod01', 'stag01', 'dev001'], now }),
      sid: `req_v${b}_${i}`,
      receivedAt: new Date(now).toISOString(),
      accountSid: 'acc_1',
      bucketSid: 'bkt_1',
    } as never;
    if (CONSUMERS)
      (rec as { consumer?: object }).consumer = { id: `cus_${Math.floor(CONSUMERS * r() ** 3)}` };
    (rec as { endpoint: string }).endpoint = endpointTemplate(
      (rec as { request: { path: string } }).request.path,
    );
    return toRow(rec, 0, off++);
  });
  const c0 = process.cpuUsage();
  await writer.insert(rows, `t:0:${off - N}-${off - 1}`);
  const u = process.cpuUsage(c0);
  if (b >= 2) per.push((u.user + u.system) / N);
}
per.sort((a, b) => a - b);
console.log(
  JSON.stringify({
    variant,
    consumers: CONSUMERS,
    drop: DROP,
    medianUsPerRecord: +per[per.length >> 1]!.toFixed(1),
    mean: +(per.reduce((a, b) => a + b, 0) / per.length).toFixed(1),
  }),
);
try {
  fs.rmSync(tmp, { recursive: true, force: true });
} catch {
  /* chDB still closing */
}
process.exit(0);
