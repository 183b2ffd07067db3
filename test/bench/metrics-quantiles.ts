/**
 * Measures the mergeable quantile functions that could back `requests_minute.duration_digest`
 * (002_metrics.sql): accuracy of p50/p95/p99 merged from per-minute states against
 * `quantileExact` over the raw values, stored size of the states, and merge time.
 *
 * Runs on its OWN temporary chDB directory (never the service's):
 *   npx tsx test/bench/metrics-quantiles.ts [rows=100000] [blockRows=1000]
 *
 * Durations are long-tailed: a log-normal body (median ~40 ms), 1% slow outliers (seconds) and
 * 5% sub-millisecond cache hits, with microsecond resolution like SDK timings.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Session } from 'chdb';

const ROWS = Number(process.argv[2] ?? 100_000);
const BLOCK = Number(process.argv[3] ?? 1000);
const GROUPS = Number(process.argv[4] ?? 12);
const LEVELS = [0.5, 0.95, 0.99];

const CANDIDATES: { name: string; fn: string; arg: string; type?: string; post?: string }[] = [
  { name: 'quantilesDD(0.001)', fn: 'quantilesDD(0.001, 0.5, 0.95, 0.99)', arg: 'd' },
  { name: 'quantilesDD(0.005)', fn: 'quantilesDD(0.005, 0.5, 0.95, 0.99)', arg: 'd' },
  { name: 'quantilesDD(0.01)', fn: 'quantilesDD(0.01, 0.5, 0.95, 0.99)', arg: 'd' },
  { name: 'quantilesTDigest', fn: 'quantilesTDigest(0.5, 0.95, 0.99)', arg: 'd' },
  { name: 'quantilesBFloat16', fn: 'quantilesBFloat16(0.5, 0.95, 0.99)', arg: 'd' },
  // A log-bucketed histogram: values rounded to a geometric grid of ratio 2^(1/347) (0.2%, so at
  // most 0.1% rounding error), counted exactly by quantilesExactWeighted (a value -> count map).
  {
    name: 'ExactWeighted(log grid)',
    fn: 'quantilesExactWeighted(0.5, 0.95, 0.99)',
    arg: 'if(d > 0, exp2(round(log2(d) * 347) / 347), 0), 1',
  },
  // The same grid, but the state keeps the Int16 grid index (smaller hash map keys); the value is
  // exp2(index / 347), computed after the merge.
  {
    name: 'ExactWeighted(Int16 grid)',
    fn: 'quantilesExactWeighted(0.5, 0.95, 0.99)',
    arg: 'if(d > 0, toInt16(round(log2(d) * 347)), toInt16(-32768)), 1',
    type: 'Int16, UInt8',
    post: 'arrayMap(i -> if(i = -32768, 0, exp2(i / 347)), X)',
  },
  // The grid of 004_digest_grid_100.sql: ratio 2^(1/100), at most 0.35% rounding error, ~3x fewer
  // entries per state than 347.
  {
    name: 'ExactWeighted(Int16 grid 100)',
    fn: 'quantilesExactWeighted(0.5, 0.95, 0.99)',
    arg: 'if(d > 0, toInt16(round(log2(d) * 100)), toInt16(-32768)), 1',
    type: 'Int16, UInt8',
    post: 'arrayMap(i -> if(i = -32768, 0, exp2(i / 100)), X)',
  },
  // quantileTiming takes whole milliseconds (UInt): the truncation is part of what is measured.
  { name: 'quantilesTiming', fn: 'quantilesTiming(0.5, 0.95, 0.99)', arg: 'toUInt32(d)' },
];

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-quantiles-'));
const s = new Session(dir);
const q = (sql: string): string => s.query(sql, 'TSV').trim();

try {
  const argType = (arg: string): string =>
    arg === 'd' ? 'Float64' : arg.startsWith('toUInt32') ? 'UInt32' : 'Float64, UInt8';
  const cols = CANDIDATES.map((c, i) => `s${i} AggregateFunction(${c.fn}, ${c.type ?? argType(c.arg)})`);
  q(`CREATE TABLE raw (minute DateTime, grp UInt8, d Float64) ENGINE = MergeTree ORDER BY minute`);
  q(`CREATE TABLE agg (minute DateTime, grp UInt8, ${cols.join(', ')})
     ENGINE = AggregatingMergeTree ORDER BY (minute, grp) SETTINGS min_bytes_for_wide_part = 0`);
  q(`CREATE MATERIALIZED VIEW agg_mv TO agg AS SELECT minute, grp,
     ${CANDIDATES.map((c, i) => `${c.fn.replace('(', 'State(')}(${c.arg}) AS s${i}`).join(', ')}
     FROM raw GROUP BY minute, grp`);
  // Blocks of BLOCK rows like the processor's inserts: many partial states per minute and group.
  for (let off = 0; off < ROWS; off += BLOCK) {
    q(`INSERT INTO raw SELECT
         toDateTime('2026-11-01 00:00:00') + intDiv(number * 180, ${ROWS}) * 60 AS minute,
         number % ${GROUPS} AS grp,
         round(multiIf(rand(1) % 100 < 5, randUniform(0.05, 1.0),
                       rand(2) % 100 < 1, exp(randNormal(log(3000), 0.8)),
                       exp(randNormal(log(40), 1.1))), 3) AS d
       FROM numbers(${off}, ${Math.min(BLOCK, ROWS - off)})`);
  }
  const exact = (where: string): number[] =>
    JSON.parse(q(`SELECT quantilesExact(${LEVELS.join(', ')})(d) FROM raw ${where}`)) as number[];
  // The order statistics at ranks floor(q*(n-1)) and floor(q*n): sketches disagree with
  // quantileExact by up to one rank, which in a sparse tail alone can exceed 1%.
  const band = (where: string): [number, number][] =>
    JSON.parse(
      q(`SELECT [${LEVELS.map((l) => `(a[toUInt64(floor(${l} * (n - 1))) + 1], a[toUInt64(floor(${l} * n)) + 1])`).join(', ')}]
         FROM (SELECT arraySort(groupArray(d)) AS a, count() AS n FROM raw ${where})`)
        .replaceAll('(', '[')
        .replaceAll(')', ']'),
    ) as [number, number][];
  const merged = (i: number, where: string): number[] => {
    const c = CANDIDATES[i]!;
    const expr = `${c.fn.replace('(', 'Merge(')}(s${i})`;
    return JSON.parse(q(`SELECT ${c.post ? c.post.replace('X', expr) : expr} FROM agg ${where}`)) as number[];
  };
  const scopes = [
    { label: 'whole range', where: '' },
    { label: 'one group', where: 'WHERE grp = 3' },
    { label: 'one hour', where: "WHERE minute >= '2026-11-01 01:00:00' AND minute < '2026-11-01 02:00:00'" },
  ];
  const sizes = new Map(
    q(`SELECT name, data_compressed_bytes, data_uncompressed_bytes FROM system.columns
       WHERE database = currentDatabase() AND table = 'agg' AND name LIKE 's%'`)
      .split('\n')
      .map((l) => l.split('\t'))
      .map(([n, c, u]) => [n, { compressed: Number(c), uncompressed: Number(u) }]),
  );
  console.log(`rows=${ROWS} block=${BLOCK} aggregate rows=${q('SELECT count() FROM agg')}`);
  console.log(
    `exact (whole range) p50/p95/p99 = ${exact('')
      .map((x) => x.toFixed(3))
      .join(' / ')}`,
  );
  for (const [i, c] of CANDIDATES.entries()) {
    let worst = 0;
    let worstBand = 0;
    const parts: string[] = [];
    for (const scope of scopes) {
      const e = exact(scope.where);
      const b = band(scope.where);
      const m = merged(i, scope.where);
      const errs = e.map((x, k) => Math.abs((m[k] ?? NaN) - x) / x);
      const bandErrs = b.map(([lo, hi], k) => {
        const v = m[k] ?? NaN;
        return v < lo ? (lo - v) / lo : v > hi ? (v - hi) / hi : 0;
      });
      worst = Math.max(worst, ...errs);
      worstBand = Math.max(worstBand, ...bandErrs);
      parts.push(
        `${scope.label}: ${errs.map((x) => (100 * x).toFixed(3) + '%').join(' ')}` +
          `  (outside rank band: ${bandErrs.map((x) => (100 * x).toFixed(3) + '%').join(' ')})`,
      );
    }
    const t0 = performance.now();
    for (let k = 0; k < 20; k++) merged(i, '');
    const ms = (performance.now() - t0) / 20;
    const size = sizes.get(`s${i}`);
    console.log(
      `${c.name.padEnd(20)} worst rel. error ${(100 * worst).toFixed(3)}% (${(100 * worstBand).toFixed(3)}% outside rank band)  merge ${ms.toFixed(1)} ms  ` +
        `state ${((size?.uncompressed ?? 0) / 1024) | 0} KiB (${((size?.compressed ?? 0) / 1024) | 0} KiB compressed)\n    ${parts.join('\n    ')}`,
    );
  }
} finally {
  s.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
