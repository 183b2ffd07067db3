import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import {
  startClickHouseServer,
  type ClickHouseServerHandle,
} from '../../infra/local/clickhouse-server.launcher.js';
import { freePort, ROOT, waitFor } from '../helpers/service-process.js';

/**
 * CLICKHOUSE_MODE=server's local ClickHouse server after its launcher is SIGKILLed (`kill -9` of
 * the core process): it stops by itself (its watchdog), a start right after the kill on the same
 * data folder comes up (the orphan is stopped first instead of "Cannot lock file …/status") with
 * every row written before, and a start while the first launcher still runs is refused with a
 * message (another live Tapline's database is not taken away). The whole pipeline under load is
 * test/faults/clickhouse-server-kill.test.ts (the fault suite).
 */

const CACHE = path.join(ROOT, '.cache');
const RUNS = path.join(CACHE, 'ch-restart-runs');
const log = pino({ level: 'warn' });
const holders: ChildProcess[] = [];
const servers: ClickHouseServerHandle[] = [];
const dirs: string[] = [];

afterAll(async () => {
  for (const h of holders) if (h.exitCode === null && h.signalCode === null) h.kill('SIGKILL');
  await Promise.all(servers.map((s) => s.stop()));
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function query(url: string, sql: string): Promise<string> {
  const res = await fetch(`${url}/?query=${encodeURIComponent(sql)}`, { method: 'POST' });
  const text = await res.text();
  if (!res.ok) throw new Error(`${res.status}: ${text}`);
  return text.trim();
}

interface World {
  dataDir: string;
  httpPort: number;
  tcpPort: number;
}

async function world(name: string): Promise<World> {
  const dataDir = path.join(RUNS, `${name}-${Date.now()}-${process.pid}`);
  fs.mkdirSync(dataDir, { recursive: true });
  dirs.push(dataDir);
  return { dataDir, httpPort: await freePort(), tcpPort: await freePort() };
}

/** A separate Node process that starts the server and keeps running: the Tapline core's place. */
async function holder(w: World): Promise<{ child: ChildProcess; url: string; pid: number }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(ROOT, 'test/helpers/clickhouse-holder.ts')],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        CH_CACHE_DIR: CACHE,
        CH_DATA_DIR: w.dataDir,
        CH_HTTP_PORT: String(w.httpPort),
        CH_TCP_PORT: String(w.tcpPort),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  holders.push(child);
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`holder exited with ${code}`)));
  });
  return { child, ...(JSON.parse(line) as { url: string; pid: number }) };
}

/** The holder SIGKILLed, as `kill -9` of the core would end it. */
async function kill9(child: ChildProcess): Promise<void> {
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await gone;
}

describe('local ClickHouse server after kill -9 of its launcher', () => {
  it('stops by itself once its launcher is gone', async () => {
    const w = await world('watchdog');
    const h = await holder(w);
    expect(alive(h.pid)).toBe(true);
    await kill9(h.child);
    await waitFor(() => !alive(h.pid), { timeoutMs: 30_000, what: 'the orphaned server to stop' });
  }, 60_000);

  it('a start right after the kill replaces the orphan and keeps every row', async () => {
    const w = await world('restart');
    const h = await holder(w);
    await query(h.url, 'CREATE TABLE t (n UInt32) ENGINE = MergeTree ORDER BY n');
    await query(h.url, 'INSERT INTO t SELECT number FROM numbers(1000)');
    await kill9(h.child);
    // At once: the orphan still holds the data folder's lock.
    const again = await startClickHouseServer({ cacheDir: CACHE, ...w, log });
    servers.push(again);
    expect(alive(h.pid)).toBe(false);
    expect(await query(again.url, 'SELECT count(), uniqExact(n) FROM t')).toBe('1000\t1000');
  }, 90_000);

  it('a start on the data of a server whose launcher still runs is refused with a message', async () => {
    const w = await world('in-use');
    const h = await holder(w);
    await expect(startClickHouseServer({ cacheDir: CACHE, ...w, log })).rejects.toThrow(
      new RegExp(`in use by process ${h.child.pid}`),
    );
    expect(alive(h.pid)).toBe(true);
    expect(await query(h.url, 'SELECT 1')).toBe('1');
  }, 60_000);
});
