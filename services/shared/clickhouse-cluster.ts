import { TABLES } from './tables.js';

/**
 * The migrations' statements for a ClickHouse cluster (CLICKHOUSE_CLUSTER, docs/scaling.md).
 *
 * The single-server migrations in infra/clickhouse/migrations stay the one source; on a cluster
 * each statement is rewritten:
 * - a table `t` becomes `t_local` on every node (`ON CLUSTER`), its engine the `Replicated…`
 *   variant with the usual `{shard}`/`{replica}` macros, plus a `Distributed` table `t` over the
 *   `t_local` tables, sharded by `cityHash64(bucket_sid)` where the table has a bucket (so one
 *   bucket's rows, aggregates and deletions live on one shard) and by `rand()` otherwise. The
 *   service keeps reading and writing the names it knows (`requests`, `requests_minute`, …);
 * - a materialized view reads and writes the local tables of its node (`FROM t_local`,
 *   `TO t_local`), so a block inserted through the Distributed table is aggregated on the shard
 *   that stores it;
 * - `ALTER`/`TRUNCATE`/`DROP` run `ON CLUSTER`, on the local tables (and for column changes on the
 *   Distributed table too); `INSERT … SELECT` goes through the Distributed tables unchanged;
 * - `non_replicated_deduplication_window` becomes `replicated_deduplication_window`: replicated
 *   tables keep the insert deduplication tokens in Keeper, shared by the replicas of a shard.
 */

const KNOWN = new Set<string>(Object.values(TABLES).filter((t) => t !== TABLES.migrations));

const local = (t: string) => `${t}_local`;

function onCluster(cluster: string): string {
  return `ON CLUSTER '${cluster}'`;
}

/** `ENGINE = X` or `ENGINE = X(args)` → the Replicated engine with its Keeper path first. */
function replicatedEngine(engine: string, args: string, table: string): string {
  if (engine === 'Null') return 'Null';
  const keeperArgs = `'/clickhouse/tables/{shard}/{database}/${table}', '{replica}'`;
  return `Replicated${engine}(${keeperArgs}${args.trim() ? `, ${args.trim()}` : ''})`;
}

/** Rewrites `FROM t` / `JOIN t` of known tables to their local tables (view bodies). */
function localSources(sql: string): string {
  return sql.replace(/\b(FROM|JOIN)\s+([A-Za-z_][A-Za-z0-9_]*)\b/g, (m, kw: string, name: string) =>
    KNOWN.has(name) ? `${kw} ${local(name)}` : m,
  );
}

/** The statements to run on a cluster for one single-server migration statement. */
export function clusterStatements(statement: string, cluster: string): string[] {
  const s = statement.trim();

  const table =
    /^CREATE TABLE IF NOT EXISTS\s+([A-Za-z_][A-Za-z0-9_]*)\s*(\([\s\S]*\))\s*ENGINE\s*=\s*([A-Za-z]+)(?:\(([^)]*)\))?([\s\S]*)$/i.exec(
      s,
    );
  if (table) {
    const [, name, columns, engine, args = '', rest] = table as unknown as [
      string,
      string,
      string,
      string,
      string | undefined,
      string,
    ];
    const shardKey = /\bbucket_sid\b/.test(columns) ? 'cityHash64(bucket_sid)' : 'rand()';
    const tail = rest.replace(/non_replicated_deduplication_window/g, 'replicated_deduplication_window');
    return [
      `CREATE TABLE IF NOT EXISTS ${local(name)} ${onCluster(cluster)}\n${columns}\nENGINE = ${replicatedEngine(engine, args, local(name))}${tail}`,
      `CREATE TABLE IF NOT EXISTS ${name} ${onCluster(cluster)} AS ${local(name)}\nENGINE = Distributed('${cluster}', currentDatabase(), ${local(name)}, ${shardKey})`,
    ];
  }

  const view =
    /^CREATE MATERIALIZED VIEW IF NOT EXISTS\s+([A-Za-z_][A-Za-z0-9_]*)\s+TO\s+([A-Za-z_][A-Za-z0-9_]*)\s+AS\b([\s\S]*)$/i.exec(
      s,
    );
  if (view) {
    const [, name, target, body] = view as unknown as [string, string, string, string];
    return [
      `CREATE MATERIALIZED VIEW IF NOT EXISTS ${name} ${onCluster(cluster)} TO ${KNOWN.has(target) ? local(target) : target} AS${localSources(body)}`,
    ];
  }

  const alter = /^ALTER TABLE\s+([A-Za-z_][A-Za-z0-9_]*)\s+([\s\S]*)$/i.exec(s);
  if (alter) {
    const [, name, action] = alter as unknown as [string, string, string];
    if (!KNOWN.has(name)) return [`ALTER TABLE ${name} ${onCluster(cluster)} ${action}`];
    const out = [`ALTER TABLE ${local(name)} ${onCluster(cluster)} ${action}`];
    // A Distributed table carries the columns of its local tables (no TTL, no indexes).
    if (/^(ADD|DROP|MODIFY|RENAME)\s+COLUMN\b/i.test(action)) {
      out.push(`ALTER TABLE ${name} ${onCluster(cluster)} ${action}`);
    }
    return out;
  }

  const truncate = /^TRUNCATE TABLE(\s+IF EXISTS)?\s+([A-Za-z_][A-Za-z0-9_]*)\s*$/i.exec(s);
  if (truncate) {
    const [, ifExists = '', name] = truncate as unknown as [string, string | undefined, string];
    return [`TRUNCATE TABLE${ifExists} ${KNOWN.has(name) ? local(name) : name} ${onCluster(cluster)}`];
  }

  const drop = /^DROP (VIEW|TABLE)(\s+IF EXISTS)?\s+([A-Za-z_][A-Za-z0-9_]*)\s*$/i.exec(s);
  if (drop) {
    const [, kind, ifExists = '', name] = drop as unknown as [string, string, string | undefined, string];
    const names = KNOWN.has(name) ? [name, local(name)] : [name];
    return names.map((n) => `DROP ${kind}${ifExists} ${n} ${onCluster(cluster)} SYNC`);
  }

  if (/^INSERT INTO\b/i.test(s)) return [s];

  throw new Error(
    `clickhouse migration statement has no cluster form (extend services/shared/clickhouse-cluster.ts): ${s.slice(0, 120)}`,
  );
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
