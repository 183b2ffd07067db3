/**
 * What a version of the metrics views costs a processor-sized insert: one chDB directory of its
 * own, the migrations applied, merges stopped, and 20,000-record blocks of the last minute (the
 * bench's records, large-set.ts) inserted into `requests` with the metrics views, the views
 * swapped between rounds so every version meets the same tables and machine load.
 *
 *   npx tsx test/bench/metrics-insert-cost.ts --dir=.cache/mic [--rounds=6] [--inserts=10] [--block=20000]
 *
 * Versions (the `requests_minute_mv` and `requests_rollup_mv` of a migration file each): `004`
 * (grid 100; levels 10, 60, 1440), `005` (004's minute view; levels 10, 60, 360, 1440) and `006`
 * (grid 50; 005's levels, each row also for all environments:
 * 006_duration_grid_all_environments.sql), plus `none` (the same block into a copy of `requests`
 * without views: the block's generation and the raw insert). The deletion view stays as the
 * migrations left it (no deletions here). Each round runs every version, in turns that alternate
 * their order; the figure is the process CPU per insert (chDB runs in this process, so it is the
 * insert's own cost whatever else runs on the machine), median per round and over all rounds.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import {
  CH_MIGRATIONS_DIR,
  createClickHouse,
  migrateClickHouse,
  splitStatements,
} from '../../services/shared/clickhouse.js';
import { TABLES } from '../../services/shared/tables.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';
import { largeSetSql } from './large-set.js';

const flag = (name: string, def: string): string =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? def;
const DIR = flag('dir', '');
if (!DIR) throw new Error('--dir=PATH is required');
const ROUNDS = Number(flag('rounds', '6'));
const INSERTS = Number(flag('inserts', '10'));
const BLOCK = Number(flag('block', '20000'));

const cfg = embeddedClickHouse(DIR);
const ch = createClickHouse(cfg);

/** The `CREATE MATERIALIZED VIEW … <name>` statement of a migration file. */
function view(file: string, name: string): string {
  const sql = fs.readFileSync(path.join(CH_MIGRATIONS_DIR, file), 'utf8');
  const found = splitStatements(sql).find((s) =>
    new RegExp(`MATERIALIZED VIEW IF NOT EXISTS ${name}\\b`).test(s),
  );
  if (!found) throw new Error(`${file} creates no ${name}`);
  return found;
}

/** The migration whose views the service runs now. */
const LATEST = '006_duration_grid_all_environments.sql';

/** A version: its minute view and its rollup view. */
const views = (minuteFile: string, rollupFile: string): string[] => [
  view(minuteFile, 'requests_minute_mv'),
  view(rollupFile, 'requests_rollup_mv'),
];

const median = (v: number[]): number => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** Replaces the minute and rollup views with `statements`. */
async function swap(statements: string[]): Promise<void> {
  for (const name of ['requests_minute_mv', 'requests_rollup_mv'])
    await ch.command({ query: `DROP VIEW IF EXISTS ${name}` });
  for (const query of statements) await ch.command({ query });
}

let offset = 3_000_000_000;
async function insertBlocks(table: string): Promise<number[]> {
  const cpu: number[] = [];
  for (let i = 0; i < INSERTS; i++) {
    const c = cpuMs();
    await ch.command({
      query: largeSetSql(['prod01', 'stag01', 'dev001']).replace(
        `INSERT INTO ${TABLES.requests}`,
        `INSERT INTO ${table}`,
      ),
      query_params: {
        a: 'acc_insertcost0000000000000000',
        b: 'bkt_insertcost0000000000000000',
        now: Date.now(),
        span: 60_000,
        from: offset,
        rows: BLOCK,
      },
    });
    cpu.push(cpuMs() - c);
    offset += BLOCK;
  }
  return cpu;
}

try {
  await migrateClickHouse(ch, cfg, pino({ level: 'warn' }));
  await ch.command({ query: 'CREATE DATABASE IF NOT EXISTS bench_raw' });
  await ch.command({ query: `CREATE TABLE IF NOT EXISTS bench_raw.requests AS ${TABLES.requests}` });
  await ch.command({ query: 'SYSTEM STOP MERGES' });
  const versions: [string, string[] | undefined][] = [
    ['none', undefined],
    ['004', views('004_duration_histograms.sql', '004_duration_histograms.sql')],
    ['005', views('004_duration_histograms.sql', '005_six_hour_rollup.sql')],
    ['006', views(LATEST, LATEST)],
  ];
  const all = new Map<string, number[]>(versions.map(([v]) => [v, []]));
  await insertBlocks('bench_raw.requests'); // warm-up: JIT, caches, first parts
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? versions : [...versions].reverse();
    const line: string[] = [];
    for (const [name, statements] of order) {
      if (statements) await swap(statements);
      const t = performance.now();
      const cpu = await insertBlocks(statements ? TABLES.requests : 'bench_raw.requests');
      all.get(name)!.push(...cpu);
      line.push(`${name} ${median(cpu).toFixed(1)} (wall ${((performance.now() - t) / INSERTS).toFixed(1)})`);
    }
    console.log(
      `round ${r + 1}: CPU ms per insert, median: ${line.join(', ')}; load ${os.loadavg()[0]!.toFixed(1)}`,
    );
  }
  console.log(
    `all rounds, CPU ms per ${BLOCK}-record insert, median: ` +
      versions.map(([v]) => `${v} ${median(all.get(v)!).toFixed(1)}`).join(', '),
  );
} finally {
  // The directory is left as the migrations made it, with the latest views in place.
  await swap(views(LATEST, LATEST));
  await ch.close();
}
