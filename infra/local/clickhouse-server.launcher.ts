import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Logger } from 'pino';
import { startWatchdog } from './postgres.launcher.js';

/**
 * Runs ClickHouse's real HTTP interface as a separate process, from the engine inside the `chdb`
 * package (`@chdb/lib-linux-x64-gnu`, the same engine version the embedded mode runs). There is no
 * `clickhouse-server` binary to download here, but `libchdb.so` exports `chdb_query_cmdline`,
 * which runs `clickhouse-local` with any flags, and `clickhouse-local` opens the server's HTTP and
 * native listeners with `SYSTEM START LISTEN`. A 16-line C launcher, compiled once into the cache
 * folder with the system C compiler, passes its argv through; a never-ending `sleepEachRow` query
 * keeps the process alive until SIGTERM. A stand-in for `clickhouse-server` in local runs and
 * tests: production deployments point CLICKHOUSE_URL at real ClickHouse servers (docs/scaling.md).
 *
 * The server stops with the process that started it, however that one ends: a detached watchdog
 * shell sends it SIGTERM once the launcher's pid is gone (SIGKILL 15 s later). A start on a data
 * folder whose server still runs (the watchdog not done yet, or a launch without one) stops that
 * server first, unless the launcher named in `<dataDir>/server.owner` still runs: that is another
 * Tapline's live database, and the start stops with a message instead of taking it away.
 */
export interface ClickHouseServerHandle {
  url: string;
  pid: number;
  stop(): Promise<void>;
  kill(signal?: NodeJS.Signals): void;
  exited: Promise<number | null>;
}

export interface ClickHouseServerOptions {
  cacheDir: string;
  dataDir: string;
  httpPort: number;
  tcpPort: number;
  log: Logger;
}

const LAUNCHER_C = `#include <stdio.h>
#include <stddef.h>
typedef struct chdb_result_ chdb_result;
extern chdb_result *chdb_query_cmdline(int argc, char **argv);
extern const char *chdb_result_error(chdb_result *);
extern char *chdb_result_buffer(chdb_result *);
extern size_t chdb_result_length(chdb_result *);
int main(int argc, char **argv) {
  chdb_result *r = chdb_query_cmdline(argc, argv);
  const char *err = r ? chdb_result_error(r) : "null result";
  if (err && *err) { fprintf(stderr, "%s\\n", err); return 1; }
  if (r && chdb_result_length(r)) fwrite(chdb_result_buffer(r), 1, chdb_result_length(r), stdout);
  return 0;
}
`;

/** The folder of `libchdb.so` (the platform package the `chdb` package depends on). */
function libchdbDir(): string {
  const require = createRequire(import.meta.url);
  const name = `@chdb/lib-${process.platform}-${process.arch}-gnu`;
  try {
    return path.dirname(require.resolve(`${name}/package.json`));
  } catch {
    throw new Error(
      `no ClickHouse engine for ${process.platform}-${process.arch} (package ${name} is missing; run npm install)`,
    );
  }
}

/**
 * Compiles the launcher once per engine version into `<cacheDir>/clickhouse-server/` and returns
 * its path. The binary is keyed by the library's size and mtime, so an upgraded chdb rebuilds it.
 */
export function ensureLauncher(cacheDir: string): { bin: string; libDir: string } {
  const libDir = libchdbDir();
  const lib = path.join(libDir, 'libchdb.so');
  const st = fs.statSync(lib);
  const dir = path.resolve(cacheDir, 'clickhouse-server');
  const bin = path.join(dir, `chlocal-${st.size}-${Math.floor(st.mtimeMs)}`);
  if (fs.existsSync(bin)) return { bin, libDir };
  fs.mkdirSync(dir, { recursive: true });
  const src = path.join(dir, 'chlocal.c');
  fs.writeFileSync(src, LAUNCHER_C);
  const compiler = ['cc', 'gcc', 'clang'].find((c) => {
    try {
      execFileSync(c, ['--version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  });
  if (!compiler) {
    throw new Error(
      'CLICKHOUSE_MODE=server needs a C compiler to build its 16-line launcher (cc, gcc or clang): ' +
        'install one (Debian: apt-get install gcc) or use CLICKHOUSE_MODE=embedded, or point CLICKHOUSE_URL at a ClickHouse server',
    );
  }
  const tmp = `${bin}.${process.pid}.tmp`;
  execFileSync(compiler, ['-O2', '-o', tmp, src, `-L${libDir}`, '-lchdb', `-Wl,-rpath,${libDir}`], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  fs.renameSync(tmp, bin);
  return { bin, libDir };
}

async function ping(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/ping`, { signal: AbortSignal.timeout(1_000) });
    return res.ok && (await res.text()).trim() === 'Ok.';
  } catch {
    return false;
  }
}

/** `<dataDir>/server.owner`: the pid of the launcher whose server runs on this data, then the server's. */
const ownerFile = (dataDir: string) => path.join(dataDir, 'server.owner');

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the pid exists but belongs to another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The pids of launcher processes (this file's `chlocal-*` binary) serving `dataDir`, read from
 * /proc: their command line names the data folder, so a pid reused by another program never
 * matches, and a server started before owner files existed is found too.
 */
function serversOn(dataDir: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // gone meanwhile, or not readable
    }
    if (path.basename(argv[0] ?? '').startsWith('chlocal-') && argv.includes(`--path=${dataDir}`))
      pids.push(Number(entry));
  }
  return pids;
}

/**
 * Stops a server left running on `dataDir` by a launcher that is gone (SIGKILLed before its
 * watchdog acted): SIGTERM, SIGKILL after 15 s, and waits until it has exited, which releases the
 * data folder's lock. A server whose launcher still runs is left alone: this start fails instead.
 */
async function replaceOrphans(dataDir: string, log: Logger): Promise<void> {
  const servers = serversOn(dataDir).filter((pid) => pid !== process.pid);
  if (servers.length === 0) return;
  const [owner = NaN, ownedServer = NaN] = (
    fs.existsSync(ownerFile(dataDir)) ? fs.readFileSync(ownerFile(dataDir), 'utf8') : ''
  )
    .trim()
    .split(/\s+/)
    .map(Number);
  if (
    Number.isInteger(owner) &&
    owner > 0 &&
    owner !== process.pid &&
    pidAlive(owner) &&
    servers.includes(ownedServer)
  ) {
    throw new Error(
      `the ClickHouse server on ${dataDir} is in use by process ${owner} (another Tapline started with the same DATA_DIR). ` +
        'Share it instead: start this process with CLICKHOUSE_URL set to that server (docs/scaling.md), or give it a DATA_DIR of its own',
    );
  }
  for (const pid of servers) {
    log.warn({ pid, dataDir }, 'stopping a clickhouse server left running by an earlier launch');
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      continue; // already gone
    }
  }
  const deadline = Date.now() + 15_000;
  while (servers.some(pidAlive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  for (const pid of servers.filter(pidAlive)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  const killDeadline = Date.now() + 10_000;
  while (servers.some(pidAlive) && Date.now() < killDeadline) await new Promise((r) => setTimeout(r, 100));
  if (servers.some(pidAlive))
    throw new Error(
      `a ClickHouse server left running on ${dataDir} did not stop (pids ${servers.join(', ')})`,
    );
}

export async function startClickHouseServer(opts: ClickHouseServerOptions): Promise<ClickHouseServerHandle> {
  const { bin } = ensureLauncher(opts.cacheDir);
  fs.mkdirSync(opts.dataDir, { recursive: true });
  await replaceOrphans(opts.dataDir, opts.log);
  const url = `http://127.0.0.1:${opts.httpPort}`;
  const logFile = path.join(opts.dataDir, 'server.log');
  const out = fs.openSync(logFile, 'a');
  // NOTE: explicit ports and 127.0.0.1 only: the listener serves the unauthenticated `default` user.
  // TabSeparated as the start format because the HTTP interface's default output follows it.
  const child = spawn(
    bin,
    [
      `--path=${opts.dataDir}`,
      '--listen_host=127.0.0.1',
      `--http_port=${opts.httpPort}`,
      `--tcp_port=${opts.tcpPort}`,
      '--output-format=TabSeparated',
      '--query',
      'SYSTEM START LISTEN HTTP; SYSTEM START LISTEN TCP; ' +
        'SELECT sleepEachRow(1) FROM system.numbers SETTINGS max_block_size = 1 FORMAT Null',
    ],
    { cwd: opts.dataDir, stdio: ['ignore', out, out], detached: false },
  );
  fs.closeSync(out);
  if (child.pid !== undefined) {
    startWatchdog(process.pid, child.pid, 'TERM');
    fs.writeFileSync(ownerFile(opts.dataDir), `${process.pid} ${child.pid}\n`);
  }
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (c) => resolve(c));
    child.once('error', (err) => {
      fs.appendFileSync(logFile, `${err.message}\n`);
      resolve(null);
    });
  });
  let running = true;
  void exited.then(() => (running = false));
  const deadline = Date.now() + 60_000;
  while (!(await ping(url))) {
    if (!running || Date.now() > deadline) {
      child.kill('SIGKILL');
      const tail = fs.readFileSync(logFile, 'utf8').split('\n').slice(-15).join('\n');
      throw new Error(`ClickHouse server did not start on ${url}:\n${tail}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  opts.log.info({ url, pid: child.pid, dataDir: opts.dataDir }, 'clickhouse server started');
  return {
    url,
    pid: child.pid!,
    exited,
    kill: (signal = 'SIGKILL') => {
      if (running) child.kill(signal);
    },
    stop: async () => {
      if (!running) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
      opts.log.info({ url }, 'clickhouse server stopped');
    },
  };
}
