import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import type { createChdbConnection as CreateChdbConnection } from 'chdb/connection';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { projectRoot } from './postgres.js';
import { TABLES } from './tables.js';

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
  return createClient({
    connection: createChdbConnection({ path: cfg.path }),
    database: cfg.database,
    clickhouse_settings: settings,
  } as Parameters<typeof createClient>[0]);
}

export const CH_MIGRATIONS_DIR = path.join(projectRoot(), 'infra', 'clickhouse', 'migrations');

/**
 * Applies `infra/clickhouse/migrations/NNN_name.sql` in order, each once, recorded in a
 * migrations table. Statements are split on `;` at line ends. `{retention_days:UInt32}` style
 * placeholders are not supported by DDL, so `${RETENTION_DAYS}` is substituted textually from config.
 * NOTE: ClickHouse has no transactional DDL, so every statement must be idempotent
 * (IF NOT EXISTS) for a migration interrupted half-way to be re-run safely.
 */
export async function migrateClickHouse(
  client: ClickHouseClient,
  cfg: Config['clickhouse'],
  log: Logger,
): Promise<number> {
  // The database must exist before a client bound to it can run anything else.
  await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${cfg.database}` });
  await client.command({
    query: `CREATE TABLE IF NOT EXISTS ${cfg.database}.${TABLES.migrations}
      (name String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3)) ENGINE = MergeTree ORDER BY name`,
  });
  const done = new Set(
    (
      await (
        await client.query({
          query: `SELECT name FROM ${cfg.database}.${TABLES.migrations}`,
          format: 'JSONEachRow',
        })
      ).json<{ name: string }>()
    ).map((r) => r.name),
  );
  const files = fs
    .readdirSync(CH_MIGRATIONS_DIR)
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort();
  let applied = 0;
  for (const file of files) {
    if (done.has(file)) continue;
    const sql = fs
      .readFileSync(path.join(CH_MIGRATIONS_DIR, file), 'utf8')
      .replaceAll('${RETENTION_DAYS}', String(cfg.retentionDays))
      .replaceAll('${DATABASE}', cfg.database);
    for (const statement of splitStatements(sql)) {
      await client.command({ query: statement });
    }
    await client.insert({
      table: `${cfg.database}.${TABLES.migrations}`,
      values: [{ name: file }],
      format: 'JSONEachRow',
    });
    applied++;
    log.info({ file }, 'clickhouse migration applied');
  }
  await applyRetention(client, cfg, log);
  return applied;
}

/** Tables with a retention TTL and the time expression it counts from (as in the migrations). */
const RETENTION_TTLS: readonly { table: string; from: string }[] = [
  { table: TABLES.requests, from: 'toDateTime(created_at)' },
  { table: TABLES.requestsMinute, from: 'minute' },
  { table: TABLES.requestsRollup, from: 't' },
  { table: TABLES.excludedMinute, from: 'minute' },
];

/** RETENTION_DAYS may change between starts; every TTL follows it without a new migration. */
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
  for (const { table, from } of RETENTION_TTLS) {
    const q = ddl.get(table);
    if (!q || q.includes(`toIntervalDay(${cfg.retentionDays})`)) continue;
    await client.command({
      query: `ALTER TABLE ${table} MODIFY TTL ${from} + toIntervalDay(${cfg.retentionDays})`,
    });
    log.info({ table, days: cfg.retentionDays }, 'retention changed');
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
