/**
 * The idle stack's footprint (docs/scaling.md "Footprint"): starts the service as `npm start` does
 * (after `npm run build`; Kafka, Postgres and, with `--clickhouse server`, a ClickHouse server
 * under it) in a fresh DATA_DIR, lets it settle, then over `--seconds` reads each process's CPU
 * time and resident memory from /proc and the data directory's disk use per part.
 *
 *   npx tsx test/bench/idle-footprint.ts [--clickhouse embedded|server] [--settle 60] [--seconds 60]
 *
 * RSS counts pages shared between processes (Postgres's shared buffers) once per process, so the
 * sum is an upper bound.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { cpuSeconds, descendants, freePort, memory, ROOT, startService } from './bench-stack.js';

const { values: opt } = parseArgs({
  options: {
    clickhouse: { type: 'string', default: 'embedded' },
    settle: { type: 'string', default: '60' },
    seconds: { type: 'string', default: '60' },
  },
});
if (opt.clickhouse !== 'embedded' && opt.clickhouse !== 'server')
  throw new Error(`--clickhouse is embedded or server, not ${opt.clickhouse}`);

/** The part of the stack a process belongs to, by its command name. */
function part(comm: string): string {
  if (comm === 'java') return 'kafka';
  if (comm.startsWith('postgres') || comm === 'postmaster') return 'postgres';
  if (/^chlocal-|^clickhouse/.test(comm)) return 'clickhouse-server';
  if (comm === 'node') return 'ingest';
  return comm;
}

function comm(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '?';
  }
}

const dataDir = path.join(ROOT, '.cache', `idle-${new Date().toISOString().replace(/[:.]/g, '-')}`);
fs.mkdirSync(dataDir, { recursive: true });
const svc = await startService({
  env: {
    PORT: String(await freePort()),
    INGEST_PORT: String(await freePort()),
    KAFKA_PORT: String(await freePort()),
    KAFKA_CONTROLLER_PORT: String(await freePort()),
    PG_PORT: String(await freePort()),
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    ...(opt.clickhouse === 'server' ? { CLICKHOUSE_MODE: 'server' } : {}),
  },
  logFile: path.join(dataDir, 'service.log'),
  expectDemo: true,
});
try {
  await new Promise((r) => setTimeout(r, Number(opt.settle) * 1000));
  const pids = [svc.pid, ...descendants(svc.pid, /.*/)];
  const sample = () => new Map(pids.map((p) => [p, cpuSeconds(p)]));
  const c0 = sample();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, Number(opt.seconds) * 1000));
  const c1 = sample();
  const seconds = (performance.now() - t0) / 1000;
  const parts = new Map<string, { cores: number; rssBytes: number; processes: number }>();
  for (const p of pids) {
    const name =
      p === svc.pid
        ? `core (${opt.clickhouse === 'embedded' ? 'with chDB' : 'no ClickHouse'})`
        : part(comm(p));
    const cpu = (c1.get(p)! - c0.get(p)!) / seconds;
    const rss = memory(p).rss;
    if (!Number.isFinite(cpu) || !Number.isFinite(rss)) continue;
    const e = parts.get(name) ?? { cores: 0, rssBytes: 0, processes: 0 };
    e.cores += cpu;
    e.rssBytes += rss;
    e.processes++;
    parts.set(name, e);
  }
  const du = (dir: string) =>
    fs.existsSync(dir) ? Number(execFileSync('du', ['-sb', dir], { encoding: 'utf8' }).split('\t')[0]) : 0;
  const disk = Object.fromEntries(
    fs
      .readdirSync(dataDir)
      .filter((d) => fs.statSync(path.join(dataDir, d)).isDirectory())
      .map((d) => [d, du(path.join(dataDir, d))]),
  );
  let cores = 0;
  let rss = 0;
  console.log(
    `idle stack, ClickHouse ${opt.clickhouse}, ${seconds.toFixed(0)} s after ${opt.settle} s settling:`,
  );
  for (const [name, e] of parts) {
    cores += e.cores;
    rss += e.rssBytes;
    console.log(
      `  ${name.padEnd(28)} ${e.cores.toFixed(3)} cores  ${(e.rssBytes / 2 ** 20).toFixed(0)} MiB RSS  (${e.processes} process${e.processes > 1 ? 'es' : ''})`,
    );
  }
  console.log(`  ${'total'.padEnd(28)} ${cores.toFixed(3)} cores  ${(rss / 2 ** 20).toFixed(0)} MiB RSS`);
  console.log(
    `  disk: ${Object.entries(disk)
      .map(([d, b]) => `${d} ${(b / 2 ** 20).toFixed(1)} MiB`)
      .join(', ')}`,
  );
} finally {
  await svc.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
