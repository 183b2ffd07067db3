/**
 * What a stored record costs in chDB after its insert: background merges. K blocks of N records
 * (the bench's records, the processor's writer and the project's migrations and views) go in as
 * the processor writes them; the process CPU (Node + chDB threads) is read after the inserts and
 * again once no merge runs and the active parts stopped changing.
 *
 *   npx tsx test/bench/merge-cost.ts [blocks=30] [rows=4000] [variant=current]
 *
 * Variants change the `requests` table before the inserts: `lz4` (the record column in LZ4
 * instead of ZSTD(1)), `noidx` (without the two skip indexes), `nominute` / `norollup` (without
 * one of the two metrics views), combinations such as `lz4-noidx` or `nominute-norollup`; `cons`
 * (every record carries a consumer among 100,000, picked as test/bench/loadgen.ts picks them: a
 * few busy, most rare) and `no<view>` without one consumer view, e.g. `cons-noconsumer_labels_mv`;
 * `rollupall` / `rollupopen` / `rollupmultiif`: consumers_rollup_mv with every block length, minutes
 * and hours only, or 012's choice of levels by `multiIf` over constant lists.
 */
import fs from 'node:fs';
import path from 'node:path';
import { RequestsWriter } from '../../services/processor/requests.writer.js';
import { CH_MIGRATIONS_DIR } from '../../services/shared/clickhouse.js';
import { toRow } from '../../services/processor/row.mapper.js';
import type { StoredRecord } from '../../services/processor/pipeline.js';
import { newSid } from '../../services/shared/ids.js';
import { cpuMs, processorRecords, scratchClickHouse } from './ch-scratch.js';

const BLOCKS = Number(process.argv[2] ?? 30);
const ROWS = Number(process.argv[3] ?? 4000);
const VARIANT = process.argv[4] ?? 'current';
const ch = await scratchClickHouse(`merge-cost-${VARIANT}`);
if (VARIANT.includes('lz4'))
  await ch.command({ query: 'ALTER TABLE requests MODIFY COLUMN record String CODEC(LZ4)' });
if (VARIANT.includes('nominute')) await ch.command({ query: 'DROP VIEW requests_minute_mv' });
if (VARIANT.includes('norollup')) await ch.command({ query: 'DROP VIEW requests_rollup_mv' });
for (const view of ['consumers_minute_mv', 'consumers_rollup_mv', 'consumer_labels_mv'])
  if (VARIANT.includes(`no${view}`)) await ch.command({ query: `DROP VIEW ${view}` });
// consumers_rollup_mv (012_consumer_day_blocks_sealed.sql) with other block lists: `rollupall`
// writes every block length at every insert (as before 012), `rollupopen` minutes and hours only
// (the lower bound of what 012's view writes for current records).
const ROLLUP_LEVELS: Record<string, string> = {
  rollupall: '[toUInt16(1), 60, 1440, 10080]',
  rollupopen: '[toUInt16(1), 60]',
  rollupmultiif:
    'multiIf(toUInt32(m) < intDiv(toUInt32(now()), 604800) * 604800, [toUInt16(1), 60, 1440, 10080], toUInt32(m) < intDiv(toUInt32(now()), 86400) * 86400, [toUInt16(1), 60, 1440], [toUInt16(1), 60])',
};
for (const [name, levels] of Object.entries(ROLLUP_LEVELS)) {
  if (!VARIANT.includes(name)) continue;
  const sql = fs.readFileSync(path.join(CH_MIGRATIONS_DIR, '012_consumer_day_blocks_sealed.sql'), 'utf8');
  const view = sql.slice(sql.indexOf('CREATE MATERIALIZED VIEW'));
  const changed = view.replace(/ARRAY JOIN arrayFilter\([\s\S]*?\) AS lv/, `ARRAY JOIN ${levels} AS lv`);
  if (changed === view) throw new Error('012 has no ARRAY JOIN arrayFilter(...) AS lv to replace');
  await ch.command({ query: 'DROP VIEW consumers_rollup_mv' });
  await ch.command({ query: changed.replace(/;\s*$/, '') });
}
if (VARIANT.includes('noidx')) {
  await ch.command({ query: 'ALTER TABLE requests DROP INDEX idx_sid' });
  await ch.command({ query: 'ALTER TABLE requests DROP INDEX idx_path_value' });
}
const writer = new RequestsWriter(ch);

// Blocks are re-parsed from text, as the processor does, with new sids.
const texts = processorRecords(Math.min(ROWS, 20000)).map((r) => JSON.stringify(r));
let offset = 0;
const block = () =>
  Array.from({ length: ROWS }, (_, i) => {
    const rec = JSON.parse(texts[i % texts.length]!) as StoredRecord;
    rec.sid = newSid('request');
    if (VARIANT.includes('cons')) rec.consumer = { id: `cus_${Math.floor(100_000 * Math.random() ** 3)}` };
    return toRow(rec, 0, offset++);
  });
const cpu = () => cpuMs() / 1000;
const one = async <T>(query: string): Promise<T> =>
  (await (await ch.query({ query, format: 'JSONEachRow' })).json<T>())[0]!;
const parts = () =>
  one<{ n: number; s: string }>(
    "SELECT count() AS n, toString(groupArray(rows)) AS s FROM system.parts WHERE active AND table = 'requests' AND database = currentDatabase()",
  );

let build = 0;
let insert = 0;
const c0 = cpu();
const t0 = Date.now();
for (let b = 0; b < BLOCKS; b++) {
  let c = cpu();
  const rows = block();
  build += cpu() - c;
  c = cpu();
  await writer.insert(rows, `tok${b}`);
  insert += cpu() - c;
}
const afterInsert = cpu();
let last = '';
let stable = 0;
for (let i = 0; i < 1200 && stable < 6; i++) {
  await new Promise((res) => setTimeout(res, 250));
  const m = await one<{ n: number }>('SELECT count() AS n FROM system.merges');
  const p = await parts();
  const key = `${p.n}:${p.s}`;
  stable = Number(m.n) === 0 && key === last ? stable + 1 : 0;
  last = key;
}

const total = cpu() - c0;
const n = BLOCKS * ROWS;
const us = (s: number) => ((s * 1e6) / n).toFixed(1);
const p = await parts();
console.log(
  `${VARIANT}: ${BLOCKS} blocks of ${ROWS}; µs CPU per record: build rows ${us(build)}, insert ${us(insert)}, ` +
    `merges after ${us(total - (afterInsert - c0))} (total incl. build ${us(total)}); ` +
    `wall ${((Date.now() - t0) / 1000).toFixed(1)} s; parts now ${p.n} [${p.s}]`,
);
const size = await one<{ c: string; u: string }>(
  "SELECT formatReadableSize(sum(data_compressed_bytes)) AS c, formatReadableSize(sum(data_uncompressed_bytes)) AS u FROM system.columns WHERE table = 'requests' AND database = currentDatabase()",
);
console.log(`requests on disk ${size.c} (uncompressed ${size.u})`);
await ch.close();
