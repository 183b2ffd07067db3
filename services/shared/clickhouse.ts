import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import type { createChdbConnection as CreateChdbConnection } from 'chdb/connection';
import type pg from 'pg';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { projectRoot } from './postgres.js';
import { clusterMigrationsTable, ttlTable } from './clickhouse-cluster.js';
import { TABLES } from './tables.js';
import { noViewInsertLock, viewSwapLock, type ViewInsertLock } from './view-insert-lock.js';

export type { ClickHouseClient };

/**
 * The one ClickHouse client of the process. chDB is in-process and a data directory can be opened
 * by one process only, so every role in the process shares this client.
 */
export function createClickHouse(cfg: Config['clickhouse']): ClickHouseClient {
  const settings = {
    date_time_input_format: 'best_effort' as const,
    output_format_json_quote_64bit_integers: 0 as const,
  };
  if (cfg.url) {
    return createClient({
      url: cfg.url,
      username: cfg.user,
      password: cfg.password,
      database: cfg.database,
      clickhouse_settings: settings,
      request_timeout: 60_000,
      compression: { request: false, response: true },
    });
  }
  fs.mkdirSync(cfg.path, { recursive: true });
  // chDB (~540 MB of native engine) is loaded only in embedded mode: the container image for
  // deployments with a ClickHouse server leaves it out.
  const { createChdbConnection } = createRequire(import.meta.url)('chdb/connection') as {
    createChdbConnection: typeof CreateChdbConnection;
  };
  // NOTE: chDB runs every call in one session, and a call's settings stay set for the calls after
  // it. An `insert_deduplication_token` left there would make the next insert into the same table
  // a repeat of that block, dropped (even under `insert_deduplicate = 0`): every call starts with
  // none, and an insert that deduplicates names its own.
  // The engine's server settings (its memory bound) are argv of the engine, read once when the
  // first session of the process opens the directory: a session of their own opens it first, and
  // the client's connection joins the same engine. It closes with the client.
  const engine = engineSession(cfg);
  const client = createClient({
    connection: createChdbConnection({ path: cfg.path }),
    database: cfg.database,
    clickhouse_settings: { ...settings, insert_deduplication_token: '' },
  } as Parameters<typeof createClient>[0]);
  if (engine) {
    const close = client.close.bind(client);
    client.close = async () => {
      await close();
      engine.close();
    };
  }
  return client;
}

/** chDB's engine arguments of the configuration: its memory bound, when one is set. */
function engineArgs(cfg: Pick<Config['clickhouse'], 'embeddedMemoryBytes'>): string[] {
  return cfg.embeddedMemoryBytes ? [`--max_server_memory_usage=${cfg.embeddedMemoryBytes}`] : [];
}

function engineSession(cfg: Config['clickhouse']): { close(): void } | undefined {
  const args = engineArgs(cfg);
  if (args.length === 0) return undefined;
  const { Session } = createRequire(import.meta.url)('chdb') as {
    Session: new (path: string, opts: { connectionArgs: string[] }) => { close(): void };
  };
  return new Session(cfg.path, { connectionArgs: args });
}

/** Whether the client runs on chDB (in-process) rather than a ClickHouse server. */
export function isChdb(ch: ClickHouseClient): boolean {
  const ext = (ch as unknown as { connection?: { chdb?: unknown } }).connection?.chdb;
  return ext !== undefined && ext !== null;
}

/**
 * Time and memory limits per query class (docs/security.md "Limits"). A query over a limit fails
 * (TIMEOUT_EXCEEDED, MEMORY_LIMIT_EXCEEDED) instead of holding the engine; the API answers it as a
 * 400 that names the limit (http-errors.ts). Memory is in bytes, as ClickHouse takes it (strings:
 * UInt64 settings travel as text).
 * - api: every read of the API and /mcp (lists, metrics, live tail, stats): interactive.
 * - scheduler: threshold and schedule evaluation, in the background.
 * - processor: inserts of the processor (RowBinary blocks and their materialized views).
 * Migrations run without a time limit (an ALTER may rewrite every part of a table).
 */
export const QUERY_LIMITS = {
  api: { max_execution_time: 30, max_memory_usage: String(1024 ** 3) },
  scheduler: { max_execution_time: 60, max_memory_usage: String(1024 ** 3) },
  processor: { max_execution_time: 300, max_memory_usage: String(4 * 1024 ** 3) },
} as const;

export type QuerySettings = { max_execution_time: number; max_memory_usage: string };

/**
 * QUERY_LIMITS with the reads' memory share from the configuration (CLICKHOUSE_QUERY_MEMORY_BYTES):
 * with chDB the reads run inside the service's process, so their share stays under what the
 * process may take (docs/scaling.md "Memory").
 */
export function queryLimits(cfg: Pick<Config['limits'], 'queryMemoryBytes'>): {
  api: QuerySettings;
  scheduler: QuerySettings;
  processor: QuerySettings;
} {
  const memory = String(cfg.queryMemoryBytes);
  return {
    api: { ...QUERY_LIMITS.api, max_memory_usage: memory },
    scheduler: { ...QUERY_LIMITS.scheduler, max_memory_usage: memory },
    processor: QUERY_LIMITS.processor,
  };
}

/**
 * The same client, with `settings` as defaults of every query, command, insert and exec it runs
 * (settings a call gives itself win). One underlying connection: chDB is one engine per process.
 */
export function withQuerySettings(client: ClickHouseClient, settings: QuerySettings): ClickHouseClient {
  const wrapped = new Set(['query', 'command', 'insert', 'exec']);
  return new Proxy(client, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      // Methods run on the client itself (it may keep private fields a proxy cannot reach).
      if (typeof prop !== 'string' || !wrapped.has(prop)) return (value as () => unknown).bind(target);
      return (params: { clickhouse_settings?: Record<string, unknown> }) =>
        (value as (p: unknown) => unknown).call(target, {
          ...params,
          clickhouse_settings: { ...settings, ...params.clickhouse_settings },
        });
    },
  });
}

export const CH_MIGRATIONS_DIR = path.join(projectRoot(), 'infra', 'clickhouse', 'migrations');
/** The same migrations written for a cluster (CLICKHOUSE_CLUSTER), one file per file of CH_MIGRATIONS_DIR. */
export const CH_CLUSTER_MIGRATIONS_DIR = path.join(projectRoot(), 'infra', 'clickhouse', 'cluster');

/**
 * Migrations that change how the aggregates are computed (digests to histograms, the histogram
 * grid, new rollup levels and tables). Each is a schema change only: the rows aggregated before it
 * are rebuilt from the raw rows by `npm run admin -- rebuild-metrics`, which the migrator names in
 * its log when it applies one of them to a database holding requests.
 */
export const REBUILD_METRICS_AFTER: ReadonlySet<string> = new Set([
  '004_duration_histograms.sql',
  '005_six_hour_rollup.sql',
  '006_duration_grid_all_environments.sql',
  '008_consumer_and_key_rollups.sql',
  '009_consumer_duration_moments.sql',
]);

/**
 * Applies `infra/clickhouse/migrations/NNN_name.sql` (or the files of `dir`) in order, each once,
 * recorded by file name in a migrations table. A recorded file is never applied again, so an
 * install that applied a file keeps what it did: files change forward only, by new files. Statements are split on `;` at line ends. `{retention_days:UInt32}` style
 * placeholders are not supported by DDL, so `${RETENTION_DAYS}` is substituted textually from config.
 *
 * Migrators are serialised (docs/reliability.md "Migrations"): within a process by a queue per
 * ClickHouse target, and across processes (docker-compose starts one per role against one
 * ClickHouse server) by a Postgres advisory lock when `lockPool` is given. The list of applied
 * migrations is read after the lock is taken, so a migration another process applied meanwhile
 * is not applied again (two runs interleaved would drop and create the same views at once).
 * NOTE: ClickHouse has no transactional DDL, so every statement must be idempotent
 * (IF NOT EXISTS) for a migration interrupted half-way to be re-run safely, and every file must
 * give the same result when applied again after the later ones (test/unit/clickhouse-migrations.test.ts).
 * On a ClickHouse server each file is applied holding the view inserts' lock exclusively
 * (view-insert-lock.ts): processors of other processes that are already running pause their
 * inserts meanwhile, so none lands in a table a migration is copying and replacing.
 */
export async function migrateClickHouse(
  client: ClickHouseClient,
  cfg: Config['clickhouse'],
  log: Logger,
  lockPool?: pg.Pool,
  dir: string = CH_MIGRATIONS_DIR,
): Promise<number> {
  const target = cfg.url ? `${cfg.url}/${cfg.database}` : `chdb:${path.resolve(cfg.path)}/${cfg.database}`;
  return inProcessQueue(target, () =>
    withAdvisoryLock(lockPool, `tapline:clickhouse-migrations:${cfg.database}`, log, () =>
      applyMigrations(
        client,
        cfg,
        log,
        dir,
        lockPool && !isChdb(client) ? viewSwapLock(lockPool) : noViewInsertLock,
      ),
    ),
  );
}

/** Tail of the queue of migrators per ClickHouse target in this process. */
const queues = new Map<string, Promise<unknown>>();

/** Runs `fn` after every earlier call for the same `key` in this process has settled. */
function inProcessQueue<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const prev = queues.get(key) ?? Promise.resolve();
  const run = prev.then(fn, fn);
  const tail = run.catch(() => undefined);
  queues.set(key, tail);
  void tail.then(() => {
    if (queues.get(key) === tail) queues.delete(key);
  });
  return run;
}

/**
 * Runs `fn` holding the session-level Postgres advisory lock named `name` (waits for it), on a
 * connection of its own that is released afterwards; without a pool, runs `fn` as is. A process
 * that dies holding it loses its session, which frees the lock.
 */
async function withAdvisoryLock<T>(
  pool: pg.Pool | undefined,
  name: string,
  log: Logger,
  fn: () => Promise<T>,
): Promise<T> {
  if (!pool) return fn();
  const conn = await pool.connect();
  try {
    const got = await conn.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [name]);
    if (!got.rows[0]?.ok) {
      log.info({ lock: name }, 'waiting for another process to finish the clickhouse migrations');
      await conn.query('SELECT pg_advisory_lock(hashtext($1))', [name]);
    }
    try {
      return await fn();
    } finally {
      await conn.query('SELECT pg_advisory_unlock(hashtext($1))', [name]);
    }
  } finally {
    conn.release();
  }
}

async function applyMigrations(
  client: ClickHouseClient,
  cfg: Config['clickhouse'],
  log: Logger,
  dir: string,
  insertsPaused: ViewInsertLock,
): Promise<number> {
  // The database must exist before a client bound to it can run anything else.
  // On a cluster (CLICKHOUSE_CLUSTER) each file's statements are those of its cluster form.
  const cluster = cfg.cluster;
  await client.command({
    query: `CREATE DATABASE IF NOT EXISTS ${cfg.database}${cluster ? ` ON CLUSTER '${cluster}'` : ''}`,
  });
  await client.command({
    query: cluster
      ? clusterMigrationsTable(cfg.database, cluster)
      : `CREATE TABLE IF NOT EXISTS ${cfg.database}.${TABLES.migrations}
      (name String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3)) ENGINE = MergeTree ORDER BY name`,
  });
  const done = new Set(
    (
      await (
        await client.query({
          query: `SELECT DISTINCT name FROM ${cfg.database}.${TABLES.migrations}`,
          format: 'JSONEachRow',
        })
      ).json<{ name: string }>()
    ).map((r) => r.name),
  );
  const files = fs
    .readdirSync(dir)
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort();
  let applied = 0;
  const rebuildAfter: string[] = [];
  for (const file of files) {
    if (done.has(file)) continue;
    const sql = readMigration(dir, file, cluster)
      .replaceAll('${RETENTION_DAYS}', String(cfg.retentionDays))
      .replaceAll('${DATABASE}', cfg.database)
      .replaceAll('${CLUSTER}', cluster ?? '');
    await insertsPaused(async () => {
      for (const statement of splitStatements(sql)) {
        if (await existsAlready(client, statement)) continue;
        await client.command({ query: statement });
      }
      await client.insert({
        table: `${cfg.database}.${TABLES.migrations}`,
        values: [{ name: file }],
        format: 'JSONEachRow',
      });
    });
    applied++;
    if (REBUILD_METRICS_AFTER.has(file)) rebuildAfter.push(file);
    log.info({ file }, 'clickhouse migration applied');
  }
  if (rebuildAfter.length && (await storesRequests(client))) {
    log.warn(
      { migrations: rebuildAfter },
      'the metrics aggregated before these migrations are incomplete: run `npm run admin -- rebuild-metrics` (docs/operations.md)',
    );
  }
  await applyRetention(client, cfg, log);
  return applied;
}

/** A migration's text: its cluster form on a cluster, where a missing one stops the migrator. */
function readMigration(dir: string, file: string, cluster: string | undefined): string {
  if (!cluster) return fs.readFileSync(path.join(dir, file), 'utf8');
  const clusterFile = path.join(CH_CLUSTER_MIGRATIONS_DIR, file);
  if (!fs.existsSync(clusterFile)) {
    throw new Error(
      `clickhouse migration ${file} has no cluster form (add infra/clickhouse/cluster/${file})`,
    );
  }
  return fs.readFileSync(clusterFile, 'utf8');
}

async function storesRequests(client: ClickHouseClient): Promise<boolean> {
  const rows = await (
    await client.query({ query: `SELECT count() > 0 AS any FROM ${TABLES.requests}`, format: 'JSONEachRow' })
  ).json<{ any: number | boolean }>();
  return Boolean(Number(rows[0]?.any ?? 0));
}

const CREATE_IF_NOT_EXISTS =
  /^CREATE\s+(?:MATERIALIZED\s+VIEW|VIEW|TABLE)\s+IF\s+NOT\s+EXISTS\s+(?:(\w+)\.)?(\w+)/i;

/**
 * Whether `statement` is a `CREATE … IF NOT EXISTS` of a table or view that exists. Such a statement
 * is not sent: ClickHouse analyses a view's SELECT against the target table as it is now before
 * looking at IF NOT EXISTS, so an early view definition applied again after a later migration
 * changed its target's columns would fail although it would create nothing.
 */
async function existsAlready(client: ClickHouseClient, statement: string): Promise<boolean> {
  const m = CREATE_IF_NOT_EXISTS.exec(statement);
  if (!m) return false;
  const rows = await (
    await client.query({
      query: `SELECT count() AS n FROM system.tables
              WHERE database = ${m[1] ? '{db:String}' : 'currentDatabase()'} AND name = {name:String}`,
      query_params: { db: m[1] ?? '', name: m[2] },
      format: 'JSONEachRow',
    })
  ).json<{ n: number | string }>();
  return Number(rows[0]?.n ?? 0) > 0;
}

/** Tables with a retention TTL and the time expression it counts from (as in the migrations). */
const RETENTION_TTLS: readonly { table: string; from: string }[] = [
  { table: TABLES.requests, from: 'toDateTime(created_at)' },
  { table: TABLES.requestsMinute, from: 'minute' },
  { table: TABLES.requestsRollup, from: 't' },
  { table: TABLES.requestsKeyRollup, from: 't' },
  { table: TABLES.excludedMinute, from: 'minute' },
  { table: TABLES.consumersMinuteByHour, from: 'minute' },
  { table: TABLES.consumersMinuteBefore, from: 'minute' },
  { table: TABLES.consumersRollup, from: 't' },
];

/**
 * RETENTION_DAYS may change between starts; every TTL follows it without a new migration, and the
 * stored data shrinks at that start, not only the parts written afterwards:
 * 1. every partition whose whole period (a day of `requests`, a month of the aggregates) ends
 *    before now − RETENTION_DAYS is dropped, at every start: a drop removes its parts' folders at
 *    once and reads nothing, and covers data that expired while Tapline was stopped;
 * 2. a changed TTL is set with `MODIFY TTL`, which (`materialize_ttl_after_modify`, on by default)
 *    also rewrites the parts still stored without their expired rows before it returns, in chDB
 *    and on a server alike. Step 1 leaves it the retained partitions to rewrite.
 * A part left with no rows by that rewrite stays listed in system.parts (0 rows) until ClickHouse's
 * cleanup removes it.
 */
async function applyRetention(
  client: ClickHouseClient,
  cfg: Config['clickhouse'],
  log: Logger,
): Promise<void> {
  const rows = await (
    await client.query({
      // NOTE: chDB ignores the client's `database` option, so unqualified tables live in `default`
      // there and in CLICKHOUSE_DATABASE on a server: currentDatabase() is right for both.
      query: `SELECT name, create_table_query AS q FROM system.tables WHERE database = currentDatabase()`,
      format: 'JSONEachRow',
    })
  ).json<{ name: string; q: string }>();
  const ddl = new Map(rows.map((r) => [r.name, r.q]));
  await dropExpiredPartitions(client, cfg, log);
  for (const { table, from } of RETENTION_TTLS) {
    // On a cluster the TTL lives on the local tables (the Distributed ones have none).
    const q = ddl.get(cfg.cluster ? `${table}_local` : table);
    if (!q || q.includes(`toIntervalDay(${cfg.retentionDays})`)) continue;
    await client.command({
      query: `ALTER TABLE ${ttlTable(table, cfg.cluster)} MODIFY TTL ${from} + toIntervalDay(${cfg.retentionDays})`,
    });
    log.info({ table, days: cfg.retentionDays }, 'retention changed');
  }
}

/**
 * The first instant after partition `id` of a table partitioned by `toYYYYMMDD` (8 digits) or
 * `toYYYYMM` (6 digits) of a UTC time, in ms; undefined for any other partition id.
 */
function partitionEnd(id: string): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})?$/.exec(id);
  if (!m) return undefined;
  const [year, month, day] = [Number(m[1]), Number(m[2]) - 1, m[3] ? Number(m[3]) : undefined];
  return day === undefined ? Date.UTC(year, month + 1, 1) : Date.UTC(year, month, day + 1);
}

/** Drops every partition of the retention tables whose period ended before the retention window. */
async function dropExpiredPartitions(
  client: ClickHouseClient,
  cfg: Config['clickhouse'],
  log: Logger,
): Promise<void> {
  const names = RETENTION_TTLS.map(({ table }) => (cfg.cluster ? `${table}_local` : table));
  // On a cluster every node's parts are listed: a partition may exist on some shards only.
  const source = cfg.cluster ? `clusterAllReplicas('${cfg.cluster}', system.parts)` : 'system.parts';
  const parts = await (
    await client.query({
      query: `SELECT DISTINCT table, partition_id FROM ${source}
              WHERE database = currentDatabase() AND active AND table IN {names:Array(String)}`,
      query_params: { names },
      format: 'JSONEachRow',
    })
  ).json<{ table: string; partition_id: string }>();
  const cutoff = Date.now() - cfg.retentionDays * 86_400_000;
  for (const { table, partition_id: id } of parts) {
    const end = partitionEnd(id);
    if (end === undefined || end > cutoff) continue;
    const name = cfg.cluster ? table.slice(0, -'_local'.length) : table;
    await client.command({ query: `ALTER TABLE ${ttlTable(name, cfg.cluster)} DROP PARTITION ID '${id}'` });
    log.info({ table: name, partition: id, days: cfg.retentionDays }, 'expired partition dropped');
  }
}

export function splitStatements(sql: string): string[] {
  const withoutComments = sql
    .split('\n')
    .filter((line) => !line.trim().startsWith('--'))
    .join('\n');
  return withoutComments
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.trim())
    .filter(Boolean);
}
