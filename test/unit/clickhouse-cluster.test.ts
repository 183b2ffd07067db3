import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { query } from 'chdb';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import {
  CH_CLUSTER_MIGRATIONS_DIR,
  CH_MIGRATIONS_DIR,
  createClickHouse,
  migrateClickHouse,
  splitStatements,
} from '../../services/shared/clickhouse.js';
import { parseConfig } from '../../services/shared/config.js';
import { clusterMigrationsTable, ttlTable } from '../../services/shared/clickhouse-cluster.js';
import { TABLES } from '../../services/shared/tables.js';

const FILES = fs
  .readdirSync(CH_MIGRATIONS_DIR)
  .filter((f) => /^\d+_.*\.sql$/.test(f))
  .sort();

/** The statements of one migration file as the migrator sends them (placeholders filled). */
function statementsOf(dir: string, file: string): string[] {
  return splitStatements(
    fs
      .readFileSync(path.join(dir, file), 'utf8')
      .replaceAll('${RETENTION_DAYS}', '30')
      .replaceAll('${DATABASE}', 'tapline')
      .replaceAll('${CLUSTER}', 'tapline_cluster'),
  );
}

const statements = FILES.flatMap((f) => statementsOf(CH_MIGRATIONS_DIR, f));
const all = FILES.flatMap((f) => statementsOf(CH_CLUSTER_MIGRATIONS_DIR, f));

/** ClickHouse's own formatting of a statement: equal texts mean equal statements. */
function formatted(sql: string): string {
  return query(`SELECT formatQuery(${quote(sql)})`, 'TabSeparatedRaw').trim();
}

function quote(s: string): string {
  return `'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}

const DISTRIBUTED =
  /^CREATE TABLE IF NOT EXISTS (\w+) ON CLUSTER 'tapline_cluster' AS (\w+)_local\nENGINE = Distributed\('tapline_cluster', currentDatabase\(\), (\w+)_local, (cityHash64\(bucket_sid\)|rand\(\))\)$/;

/**
 * A cluster statement in its single-server form, or undefined for a statement only a cluster has:
 * the Distributed table in front of each local table (its sharding key checked here), and a
 * column change repeated on the Distributed table (checked against the local one).
 */
function singleServerForm(sql: string, previous: string | undefined): string | undefined {
  const d = DISTRIBUTED.exec(sql);
  if (d) {
    const [, name, as, over, key] = d;
    expect([as, over], sql).toEqual([name, name]);
    expect(previous, `${name} follows its local table`).toMatch(
      new RegExp(`^CREATE TABLE IF NOT EXISTS ${name}_local ON CLUSTER 'tapline_cluster'\\n`),
    );
    expect(key, `${name}: sharded by bucket where it has one`).toBe(
      /\bbucket_sid\b/.test(previous!) ? 'cityHash64(bucket_sid)' : 'rand()',
    );
    return undefined;
  }
  const alter = /^ALTER TABLE (\w+) ON CLUSTER 'tapline_cluster' (.*)$/s.exec(sql);
  if (alter && !alter[1]!.endsWith('_local')) {
    expect(alter[2], sql).toMatch(/^(ADD|DROP|MODIFY|RENAME) COLUMN\b/);
    expect(previous, sql).toBe(`ALTER TABLE ${alter[1]}_local ON CLUSTER 'tapline_cluster' ${alter[2]}`);
    return undefined;
  }
  // A table dropped is dropped twice on a cluster: its Distributed table, then its local tables.
  const drop = /^DROP TABLE IF EXISTS (\w+)_local ON CLUSTER 'tapline_cluster' SYNC$/.exec(sql);
  if (drop) {
    expect(previous, sql).toBe(`DROP TABLE IF EXISTS ${drop[1]} ON CLUSTER 'tapline_cluster' SYNC`);
    return undefined;
  }
  return sql
    .replace(/ ON CLUSTER 'tapline_cluster'/g, '')
    .replace(
      /\bReplicated(\w+)\('\/clickhouse\/tables\/\{shard\}\/\{database\}\/(\w+)_local(?:\/\{uuid\})?', '\{replica\}'(?:, ([^)]*))?\)/g,
      (_m, engine: string, _t: string, args?: string) => (args ? `${engine}(${args})` : engine),
    )
    .replace(/\b(\w+)_local\b/g, '$1')
    .replace(/\breplicated_deduplication_window\b/g, 'non_replicated_deduplication_window')
    .replace(/^(DROP (?:VIEW|TABLE) .*) SYNC$/, '$1');
}

describe('ClickHouse cluster DDL (CLICKHOUSE_CLUSTER)', () => {
  it('has a cluster form for every migration, and ClickHouse parses each statement', () => {
    expect(statements.length).toBeGreaterThan(10);
    expect(all.length).toBeGreaterThan(statements.length);
    for (const sql of [...all, clusterMigrationsTable('tapline', 'tapline_cluster')]) {
      // EXPLAIN AST runs ClickHouse's own parser (the engine of the deployment) without executing.
      const ast = query(`EXPLAIN AST ${sql}`, 'TabSeparated');
      expect(ast, sql).toMatch(/^(CreateQuery|AlterQuery|DropQuery|InsertQuery|TruncateQuery|Rename)/);
    }
  });

  it('replicates the requests table and shards it by bucket behind a Distributed table of the same name', () => {
    const requests = all.filter((s) => /TABLE IF NOT EXISTS requests(_local)? /.test(s));
    expect(requests).toHaveLength(2);
    expect(requests[0]).toMatch(
      /^CREATE TABLE IF NOT EXISTS requests_local ON CLUSTER 'tapline_cluster'\n\(/,
    );
    expect(requests[0]).toContain(
      "ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/{database}/requests_local', '{replica}')",
    );
    expect(requests[0]).toContain('replicated_deduplication_window = 10000');
    expect(requests[0]).not.toContain('non_replicated_deduplication_window');
    expect(requests[0]).toContain('ORDER BY (account_sid, bucket_sid, created_at, sid)');
    expect(requests[1]).toBe(
      "CREATE TABLE IF NOT EXISTS requests ON CLUSTER 'tapline_cluster' AS requests_local\n" +
        "ENGINE = Distributed('tapline_cluster', currentDatabase(), requests_local, cityHash64(bucket_sid))",
    );
  });

  it('keeps engine arguments after the Keeper path, and shards tables without a bucket at random', () => {
    const offsets = all.filter((s) => s.includes('processor_offsets'));
    expect(offsets[0]).toContain(
      "ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/processor_offsets_local', '{replica}', updated_at)",
    );
    expect(offsets[1]).toContain('processor_offsets_local, rand())');
    const deleted = all.filter((s) => /TABLE IF NOT EXISTS requests_deleted/.test(s));
    expect(deleted[0]).toMatch(/ENGINE = Null$/);
    expect(deleted[1]).toContain('requests_deleted_local, cityHash64(bucket_sid))');
  });

  it('points materialized views at the local tables of their node', () => {
    const mv = all.filter((s) => s.startsWith('CREATE MATERIALIZED VIEW IF NOT EXISTS requests_minute_mv'));
    expect(mv.length).toBeGreaterThan(0);
    for (const s of mv) {
      expect(s).toContain("requests_minute_mv ON CLUSTER 'tapline_cluster' TO requests_minute_local AS");
      expect(s).toMatch(/FROM requests_local\b/);
      expect(s).not.toMatch(/FROM requests\b(?!_)/);
    }
  });

  it('runs column changes on the local tables and the Distributed table, and TTL changes on the local tables', () => {
    const add = all.filter((s) =>
      /^ALTER TABLE requests_minute(_local)? ON CLUSTER 'tapline_cluster' ADD COLUMN/.test(s),
    );
    expect(add).toEqual([
      "ALTER TABLE requests_minute_local ON CLUSTER 'tapline_cluster' ADD COLUMN IF NOT EXISTS duration_hist SimpleAggregateFunction(sumMap, Map(Int16, Int64))",
      "ALTER TABLE requests_minute ON CLUSTER 'tapline_cluster' ADD COLUMN IF NOT EXISTS duration_hist SimpleAggregateFunction(sumMap, Map(Int16, Int64))",
    ]);
    expect(ttlTable('requests', 'c')).toBe("requests_local ON CLUSTER 'c'");
    expect(ttlTable('requests', undefined)).toBe('requests');
  });

  it('has a cluster file for every migration and no other, each the same schema as the single-server file', () => {
    expect(
      fs
        .readdirSync(CH_CLUSTER_MIGRATIONS_DIR)
        .filter((f) => f.endsWith('.sql'))
        .sort(),
    ).toEqual(FILES);
    for (const file of FILES) {
      const cluster = statementsOf(CH_CLUSTER_MIGRATIONS_DIR, file);
      const asSingle = cluster
        .map((s, i) => singleServerForm(s, cluster[i - 1]))
        .filter((s): s is string => s !== undefined);
      // Same tables, columns, types, keys, partitions, TTLs, settings and view SELECTs, statement
      // by statement, in ClickHouse's own formatting.
      expect(asSingle.map(formatted), file).toEqual(statementsOf(CH_MIGRATIONS_DIR, file).map(formatted));
    }
    // Every table but the migrations record has a local and a Distributed form; a table a later
    // migration drops is no longer among them.
    const locals = all.flatMap((s) => /^CREATE TABLE IF NOT EXISTS (\w+)_local /.exec(s)?.[1] ?? []);
    const distributed = all.flatMap((s) => DISTRIBUTED.exec(s)?.[1] ?? []);
    expect(distributed).toEqual(locals);
    const dropped = new Set(all.flatMap((s) => /^DROP TABLE IF EXISTS (\w+)_local /.exec(s)?.[1] ?? []));
    expect(locals.filter((t) => !dropped.has(t)).sort()).toEqual(
      Object.values(TABLES)
        .filter((t) => t !== TABLES.migrations)
        .sort(),
    );
  });

  it('is what the migrations send when CLICKHOUSE_CLUSTER is set (an engine without the cluster refuses the first statement)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-cluster-'));
    try {
      const cfg = parseConfig({ DATA_DIR: dir, CLICKHOUSE_CLUSTER: 'tapline_cluster' }).clickhouse;
      expect(cfg.cluster).toBe('tapline_cluster');
      const ch = createClickHouse(cfg);
      // chDB has no remote_servers: a statement ON CLUSTER fails, a single-server one would not.
      await expect(migrateClickHouse(ch, cfg, pino({ level: 'silent' }))).rejects.toThrow(
        /cluster 'tapline_cluster' not found/i,
      );
      const tables = await (
        await ch.query({
          query: 'SELECT name FROM system.tables WHERE database = currentDatabase()',
          format: 'JSONEachRow',
        })
      ).json<{ name: string }>();
      expect(tables).toEqual([]);
      await ch.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
