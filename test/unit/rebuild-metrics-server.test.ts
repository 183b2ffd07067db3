import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startClickHouseServer,
  type ClickHouseServerHandle,
} from '../../infra/local/clickhouse-server.launcher.js';
import { startPostgres, type PostgresHandle } from '../../infra/local/postgres.launcher.js';
import {
  createClickHouse,
  migrateClickHouse,
  type ClickHouseClient,
} from '../../services/shared/clickhouse.js';
import { ensureClickHouseDatabase } from '../../services/shared/clickhouse-database.js';
import { sealConsumerRollup } from '../../services/shared/consumer-seal.js';
import { parseConfig } from '../../services/shared/config.js';
import { viewInsertLock } from '../../services/shared/view-insert-lock.js';
import { freePort, ROOT } from '../helpers/service-process.js';

/**
 * `npm run admin -- rebuild-metrics` (docs/operations.md "Rebuilding the metrics") as an operator
 * runs it, against a ClickHouse server (the local server of CLICKHOUSE_MODE=server) while another
 * client keeps inserting requests under the view-insert lock, as the processors do: it refuses
 * before the migrations, its swaps wait for an insert in flight, and afterwards every request
 * stored before, during and after the command is counted once in every aggregate, with nothing of
 * the rebuild left behind.
 */
const dataDir = path.join(ROOT, '.cache', `rebuild-metrics-${Date.now()}-${process.pid}`);
let server: ClickHouseServerHandle;
let postgres: PostgresHandle;
let pool: pg.Pool;
/** The removed clients' sockets, closed once each resolves. */
const closing: Promise<void>[] = [];
let ch: ClickHouseClient;
let env: Record<string, string>;

beforeAll(async () => {
  fs.mkdirSync(dataDir, { recursive: true });
  server = await startClickHouseServer({
    cacheDir: path.join(ROOT, '.cache'),
    dataDir: path.join(dataDir, 'clickhouse'),
    httpPort: await freePort(),
    tcpPort: await freePort(),
    log: pino({ level: 'warn' }),
  });
  postgres = await startPostgres({
    dataDir: path.join(dataDir, 'postgres'),
    port: await freePort(),
    database: 'tapline',
    log: pino({ level: 'warn' }),
  });
  pool = new pg.Pool({ connectionString: postgres.url, max: 4 });
  // A client the pool removes (pool.end(), a destroyed client) closes its socket after the removal:
  // Postgres must not be stopped before, or its shutdown message reaches a client with no listener.
  pool.on('remove', (client) => {
    closing.push(
      new Promise<void>((resolve) => {
        client.once('end', () => resolve());
        setTimeout(resolve, 5000).unref();
      }),
    );
  });
  env = {
    DATA_DIR: dataDir,
    CLICKHOUSE_URL: server.url,
    CLICKHOUSE_DATABASE: 'tapline',
    DATABASE_URL: postgres.url,
  };
  const cfg = parseConfig(env).clickhouse;
  await ensureClickHouseDatabase(cfg);
  ch = createClickHouse(cfg);
}, 120_000);

afterAll(async () => {
  await ch?.close();
  await pool?.end();
  await Promise.all(closing);
  await postgres?.stop();
  await server?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

interface AdminRun {
  /** standard error so far (the command's progress lines) */
  stderr(): string;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

/** The admin command in a process of its own: exit code, standard output and standard error. */
function startRebuild(): AdminRun {
  const child = spawn(process.execPath, ['--import', 'tsx', 'services/admin.ts', 'rebuild-metrics'], {
    cwd: ROOT,
    env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString('utf8')));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
  return {
    stderr: () => stderr,
    done: new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr }))),
  };
}

const rebuildMetrics = () => startRebuild().done;

/** Waits until `check` holds, polling every 100 ms, at most `ms`. */
async function until(check: () => boolean, ms: number): Promise<void> {
  for (const end = Date.now() + ms; !check();) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Inserts `n` requests (half with a consumer), as a processor's block: under the view-insert lock
 * held shared, as the processors' inserts are.
 */
async function insert(prefix: string, n: number): Promise<void> {
  await viewInsertLock(pool, ch)(() => rawInsert(prefix, n));
}

/**
 * An insert in flight: its rows are written and it still holds the lock shared, as a processor's
 * insert does until ClickHouse answers, until `finish` is called.
 */
function insertInFlight(prefix: string, n: number): { finish: () => void; inFlight: Promise<void> } {
  let finish!: () => void;
  const finishing = new Promise<void>((resolve) => (finish = resolve));
  const inFlight = viewInsertLock(
    pool,
    ch,
  )(async () => {
    await rawInsert(prefix, n);
    await finishing;
  });
  return { finish, inFlight };
}

async function rawInsert(prefix: string, n: number): Promise<void> {
  await ch.command({
    query: `INSERT INTO requests (account_sid, bucket_sid, sid, environment_sid, created_at, received_at,
              method, endpoint, status_code, duration, consumer_id)
            SELECT 'acc_rebuild', 'bkt_rebuild', '${prefix}' || toString(number), 'prod01',
              now64(3) - number * 7, now64(3), 'GET', '/v1/things', if(number % 9 = 0, 500, 200),
              number % 250, if(number % 2 = 1, 'cus_1', '')
            FROM numbers(${n})`,
  });
}

async function counts(): Promise<Record<string, number>> {
  const [r] = await (
    await ch.query({
      query: `SELECT
        (SELECT count() FROM requests) AS raw,
        (SELECT countIf(consumer_id != '') FROM requests) AS raw_consumers,
        (SELECT sum(requests) FROM requests_minute) AS minute,
        (SELECT sum(requests) FROM requests_rollup WHERE dim = 'all' AND level = 1440 AND environment_sid = '*') AS day,
        (SELECT sum(requests) FROM requests_key_rollup WHERE level = 60) AS key_hour,
        (SELECT sum(requests) FROM consumers_minute_all) AS consumers,
        (SELECT sum(requests) FROM consumers_rollup WHERE level = 10080) AS consumers_week,
        (SELECT count() FROM system.tables WHERE database = currentDatabase() AND name LIKE '%rebuild%') AS leftovers`,
      format: 'JSONEachRow',
    })
  ).json<Record<string, number | string>>();
  return Object.fromEntries(Object.entries(r!).map(([k, v]) => [k, Number(v)]));
}

describe('npm run admin -- rebuild-metrics (ClickHouse server)', () => {
  it('refuses before the migrations are applied, and changes nothing', async () => {
    const r = await rebuildMetrics();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'admin: ClickHouse migrations not applied yet (001_requests.sql, 002_metrics.sql',
    );
    expect(r.stdout).toBe('');
  }, 60_000);

  it('rebuilds while requests keep arriving: each counted once in every aggregate', async () => {
    await migrateClickHouse(ch, parseConfig(env).clickhouse, pino({ level: 'silent' }));
    await insert('before', 4000);
    // The aggregates of the earlier requests are lost (as after a migration that changed them):
    // the rebuild must bring them back from the raw rows.
    for (const t of [
      'requests_minute',
      'requests_rollup',
      'requests_key_rollup',
      'consumers_minute_by_hour',
      'consumers_rollup',
    ]) {
      await ch.command({ query: `TRUNCATE TABLE ${t}` });
    }
    let stop = false;
    let batches = 0;
    const traffic = (async () => {
      while (!stop) {
        await insert(`during${batches++}_`, 40);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    const r = await rebuildMetrics();
    stop = true;
    await traffic;
    await insert('after', 10);
    expect(r.stderr).toContain('rebuild-metrics: swapped consumers_rollup');
    expect(r.stdout).toMatch(
      /^Rebuilt requests_minute, .* from \d+ requests stored before .* and every request stored since\.\nEmptied consumers_minute: .*\.\n$/,
    );
    expect(r.code).toBe(0);
    expect(batches).toBeGreaterThan(3);
    const total = 4000 + 40 * batches + 10;
    // The week block of consumers_rollup is complete once sealed (it has not ended yet: the seal
    // runs as 8 days later).
    await sealConsumerRollup(ch, { retentionDays: 30, now: Date.now() + 8 * 86_400_000, from: 0 });
    const c = await counts();
    expect(c.raw).toBe(total);
    expect(c).toEqual({
      raw: total,
      raw_consumers: c.raw_consumers,
      minute: total,
      day: total,
      key_hour: total,
      consumers: c.raw_consumers,
      consumers_week: c.raw_consumers,
      leftovers: 0,
    });
    expect(c.raw_consumers).toBeGreaterThan(2000);
  }, 240_000);

  it('swaps the tables only once the inserts in flight have finished', async () => {
    const { raw = 0, raw_consumers: consumers = 0 } = await counts();
    const { finish, inFlight } = insertInFlight('inflight', 30);
    const run = startRebuild();
    await until(() => run.stderr().includes('rebuild-metrics: backfilled'), 120_000);
    // The swaps wait: nothing swapped while the insert holds the lock.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(run.stderr()).not.toContain('swapped');
    finish();
    await inFlight;
    const r = await run.done;
    expect(r.stderr).toContain('rebuild-metrics: swapped requests_minute');
    expect(r.code).toBe(0);
    await sealConsumerRollup(ch, { retentionDays: 30, now: Date.now() + 8 * 86_400_000, from: 0 });
    const c = await counts();
    expect(raw).toBeGreaterThan(4000);
    const total = raw + 30;
    expect(c).toEqual({
      raw: total,
      raw_consumers: consumers + 15,
      minute: total,
      day: total,
      key_hour: total,
      consumers: consumers + 15,
      consumers_week: consumers + 15,
      leftovers: 0,
    });
  }, 240_000);

  it('applies a migration that replaces requests (016) once the inserts in flight have finished, losing none', async () => {
    const cfg = parseConfig(env).clickhouse;
    const { raw = 0 } = await counts();
    await ch.command({
      query: `ALTER TABLE schema_migrations DELETE WHERE name = '016_requests_small_granules.sql'`,
      clickhouse_settings: { mutations_sync: '2' },
    });
    const { finish, inFlight } = insertInFlight('inflight016_', 30);
    let applied: number | undefined;
    const run = migrateClickHouse(ch, cfg, pino({ level: 'silent' }), pool).then((n) => (applied = n));
    // The migration waits: nothing copied or swapped while the insert holds the lock.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(applied).toBeUndefined();
    finish();
    await inFlight;
    await run;
    expect(applied).toBe(1);
    await insert('after016_', 10);
    const tables = await (
      await ch.query({
        query: `SELECT name, create_table_query AS q FROM system.tables
                WHERE database = currentDatabase() AND name LIKE 'requests%' AND engine LIKE '%MergeTree'
                ORDER BY name`,
        format: 'JSONEachRow',
      })
    ).json<{ name: string; q: string }>();
    // The copy was swapped in and the old table dropped: one requests table, with 1 MiB granules.
    expect(tables.filter((t) => t.name.startsWith('requests_regranulated'))).toEqual([]);
    expect(tables.find((t) => t.name === 'requests')?.q).toContain('index_granularity_bytes = 1048576');
    const c = await counts();
    expect(raw).toBeGreaterThan(4000);
    expect({ raw: c.raw, minute: c.minute, day: c.day, leftovers: c.leftovers }).toEqual({
      raw: raw + 40,
      minute: raw + 40,
      day: raw + 40,
      leftovers: 0,
    });
  }, 240_000);
});
