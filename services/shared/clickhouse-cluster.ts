import { TABLES } from './tables.js';

/**
 * A ClickHouse cluster (CLICKHOUSE_CLUSTER, docs/scaling.md) runs the migrations of
 * infra/clickhouse/cluster in place of infra/clickhouse/migrations, file for file: every table `t`
 * is `t_local` on every node behind a Distributed table `t`, so the service reads and writes the
 * names it knows. What follows is the DDL the service itself sends on a cluster.
 */

const local = (t: string) => `${t}_local`;

function onCluster(cluster: string): string {
  return `ON CLUSTER '${cluster}'`;
}

/** The migrations table on a cluster: one replicated table shared by every node (no shard macro). */
export function clusterMigrationsTable(database: string, cluster: string): string {
  return `CREATE TABLE IF NOT EXISTS ${database}.${TABLES.migrations} ${onCluster(cluster)}
      (name String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3))
      ENGINE = ReplicatedMergeTree('/clickhouse/tables/${database}/${TABLES.migrations}', '{replica}')
      ORDER BY name`;
}

/** The table whose TTL a retention change alters: the local table on a cluster. */
export function ttlTable(table: string, cluster: string | undefined): string {
  return cluster ? `${local(table)} ${onCluster(cluster)}` : table;
}
