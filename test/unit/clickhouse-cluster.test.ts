import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { query } from 'chdb';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import {
  CH_MIGRATIONS_DIR,
  createClickHouse,
  migrateClickHouse,
  splitStatements,
} from '../../services/shared/clickhouse.js';
import { parseConfig } from '../../services/shared/config.js';
import {
  clusterMigrationsTable,
  clusterStatements,
  ttlTable,
} from '../../services/shared/clickhouse-cluster.js';

const statements = fs
  .readdirSync(CH_MIGRATIONS_DIR)
  .filter((f) => /^\d+_.*\.sql$/.test(f))
  .sort()
  .flatMap((f) =>
    splitStatements(
      fs
        .readFileSync(path.join(CH_MIGRATIONS_DIR, f), 'utf8')
        .replaceAll('${RETENTION_DAYS}', '30')
        .replaceAll('${DATABASE}', 'tapline'),
    ),
  );

const all = statements.flatMap((s) => clusterStatements(s, 'tapline_cluster'));

describe('ClickHouse cluster DDL (CLICKHOUSE_CLUSTER)', () => {
  it('has a cluster form for every statement of every migration, and ClickHouse parses each', () => {
    expect(statements.length).toBeGreaterThan(10);
    for (const sql of [...all, clusterMigrationsTable('tapline', 'tapline_cluster')]) {
      // EXPLAIN AST runs ClickHouse's own parser (the engine of the deployment) without executing.
      const ast = query(`EXPLAIN AST ${sql}`, 'TabSeparated');
      expect(ast, sql).toMatch(/^(CreateQuery|AlterQuery|DropQuery|InsertQuery|TruncateQuery)/);
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

  it('runs ALTER and TRUNCATE on the local tables, column changes on the Distributed table too', () => {
    const add = statements.find((s) => /ALTER TABLE requests_minute ADD COLUMN/.test(s))!;
    expect(clusterStatements(add, 'c')).toEqual([
      add.replace('ALTER TABLE requests_minute', "ALTER TABLE requests_minute_local ON CLUSTER 'c'"),
      add.replace('ALTER TABLE requests_minute', "ALTER TABLE requests_minute ON CLUSTER 'c'"),
    ]);
    expect(clusterStatements('TRUNCATE TABLE IF EXISTS requests_rollup', 'c')).toEqual([
      "TRUNCATE TABLE IF EXISTS requests_rollup_local ON CLUSTER 'c'",
    ]);
    expect(clusterStatements('ALTER TABLE requests MODIFY TTL created_at + toIntervalDay(7)', 'c')).toEqual([
      "ALTER TABLE requests_local ON CLUSTER 'c' MODIFY TTL created_at + toIntervalDay(7)",
    ]);
    expect(ttlTable('requests', 'c')).toBe("requests_local ON CLUSTER 'c'");
    expect(ttlTable('requests', undefined)).toBe('requests');
  });

  it('refuses a statement it has no cluster form for, instead of running it on one node', () => {
    expect(() => clusterStatements('OPTIMIZE TABLE requests FINAL', 'c')).toThrow(/no cluster form/);
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
