import fs from 'node:fs';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { CH_MIGRATIONS_DIR, type ClickHouseClient } from './clickhouse.js';
import { TABLES } from './tables.js';
import { noViewInsertLock, type ViewInsertLock } from './view-insert-lock.js';

/**
 * `npm run admin -- rebuild-metrics` (docs/operations.md "Rebuilding the metrics"): every
 * materialized-view target rebuilt from the raw rows of `requests`, while the processors keep
 * inserting.
 *
 * 1. Shadow tables `<target>_rebuild` (same columns, engine, TTL and settings), a Null table
 *    `requests_rebuild_source` shaped as `requests`, and shadow views: each view of the live chain
 *    again, reading `requests_rebuild_source` instead of `requests` and the shadow tables instead
 *    of the live ones. The deletion views read `requests_deleted` as the live ones do.
 * 2. A feed view copies every block inserted into `requests` with `stored_at >= cutoff` into
 *    `requests_rebuild_source`. `stored_at` is the server's `now64(3)` at the insert, so every insert
 *    that starts after the feed exists (cutoff = the server's time then, plus a margin) reaches the
 *    shadow chain through it.
 * 3. Once no insert that started before the cutoff is running, the rows with `stored_at < cutoff`
 *    are inserted into `requests_rebuild_source`: each stored row reaches the shadow chain once,
 *    by the feed or by this backfill.
 * 4. `EXCHANGE TABLES` swaps each live target with its shadow table. Views write into and read
 *    from tables by name, so from each swap on the live views feed the rebuilt table; every table
 *    of both sets receives every new block once throughout, so the order of the swaps does not
 *    matter. An insert resolves its views' targets one after the other, so none may run across a
 *    swap: the swaps hold `swapLock` (view-insert-lock.ts), which the inserts hold shared. The
 *    shadow views, the feed, the Null table and the old tables are then dropped.
 *
 * A run interrupted half-way is cleaned up by the next run (it drops what step 1 creates, by name,
 * before starting), and the live tables stay complete meanwhile. Refused on a cluster, before
 * every migration is applied, and when the database's views are not the ones listed below.
 */

/** The materialized views of the schema, with the table each reads and the table it writes. */
export const METRICS_VIEWS: readonly { view: string; from: string; to: string }[] = [
  { view: 'requests_minute_mv', from: TABLES.requests, to: TABLES.requestsMinute },
  { view: 'requests_deleted_minute_mv', from: TABLES.requestsDeleted, to: TABLES.requestsMinute },
  { view: 'requests_rollup_mv', from: TABLES.requestsMinute, to: TABLES.requestsRollup },
  { view: 'requests_key_rollup_mv', from: TABLES.requestsMinute, to: TABLES.requestsKeyRollup },
  { view: 'consumers_minute_mv', from: TABLES.requests, to: TABLES.consumersMinuteByHour },
  { view: 'consumers_deleted_minute_mv', from: TABLES.requestsDeleted, to: TABLES.consumersMinuteByHour },
  { view: 'consumer_labels_mv', from: TABLES.requests, to: TABLES.consumerLabels },
  { view: 'consumers_rollup_mv', from: TABLES.consumersMinuteByHour, to: TABLES.consumersRollup },
];

/**
 * Tables no view writes any more whose rows the queries still read (through a Merge table): the
 * rebuilt copy of a view's target holds those rows too, so each is swapped for an empty copy.
 */
export const EMPTIED_TABLES: readonly string[] = [TABLES.consumersMinuteBefore];

/** The tables the views write: what the command rebuilds. */
export const METRICS_TARGETS: readonly string[] = [...new Set(METRICS_VIEWS.map((v) => v.to))];

/** Every table swapped for its copy, the emptied ones first (so no row is read twice meanwhile). */
export const SWAPPED_TABLES: readonly string[] = [...EMPTIED_TABLES, ...METRICS_TARGETS];

const SOURCE = `${TABLES.requests}_rebuild_source`;
const FEED = `${TABLES.requests}_rebuild_feed_mv`;
const shadow = (name: string) => `${name}_rebuild`;

/** Why the rebuild does not run; the admin command prints the message as it is. */
export class RebuildRefused extends Error {}

export interface RebuildProgress {
  step: 'prepared' | 'backfilled' | 'swapped';
  table?: string;
}

export interface RebuildResult {
  /** The instant splitting the rows between the backfill and the feed (ISO, UTC). */
  cutoff: string;
  /** Rows of `requests` the backfill read. */
  backfilled: number;
  tables: readonly string[];
  /** Tables left empty (EMPTIED_TABLES): their rows are in the rebuilt ones. */
  emptied: readonly string[];
}

export interface RebuildOptions {
  /** Called after each step; the admin command prints it. */
  onProgress?: (p: RebuildProgress) => Promise<void> | void;
  /** The time added to the server's clock for the cutoff, in ms. */
  marginMs?: number;
  /**
   * Held around the swaps, so that no insert into a view's source builds its chain across one
   * (view-insert-lock.ts): the admin command passes the Postgres lock the inserts hold shared.
   */
  swapLock?: ViewInsertLock;
}

export async function rebuildMetrics(
  client: ClickHouseClient,
  cfg: Config['clickhouse'],
  log: Logger,
  options: RebuildOptions = {},
): Promise<RebuildResult> {
  if (cfg.cluster) {
    throw new RebuildRefused(
      `rebuild-metrics does not run on a cluster (CLICKHOUSE_CLUSTER=${cfg.cluster}): the swap of a table with its rebuilt copy is not atomic across shards`,
    );
  }
  const rows = async <T>(query: string, params: Record<string, unknown> = {}): Promise<T[]> =>
    (await client.query({ query, query_params: params, format: 'JSONEachRow' })).json<T>();
  const run = (query: string, settings: Record<string, string | number> = {}) =>
    client.command({ query, clickhouse_settings: settings });

  const [{ db } = { db: 'default' }] = await rows<{ db: string }>('SELECT currentDatabase() AS db');
  await checkMigrated(rows, cfg.database);
  const views = new Map(
    (
      await rows<{ name: string; q: string }>(
        `SELECT name, as_select AS q FROM system.tables
         WHERE database = currentDatabase() AND engine = 'MaterializedView'
           AND name != {feed:String} AND NOT endsWith(name, '_rebuild')`,
        { feed: FEED },
      )
    ).map((v) => [v.name, v.q]),
  );
  const known = METRICS_VIEWS.map((v) => v.view);
  const unknown = [...views.keys()].filter((v) => !known.includes(v));
  const missing = known.filter((v) => !views.has(v));
  if (unknown.length || missing.length) {
    throw new RebuildRefused(
      `the database's materialized views are not the ones rebuild-metrics knows` +
        (unknown.length ? `; unknown: ${unknown.join(', ')}` : '') +
        (missing.length ? `; missing: ${missing.join(', ')}` : ''),
    );
  }

  await cleanUp(run);
  const q = (name: string) => `${db}.${name}`;
  await run(`CREATE TABLE ${q(SOURCE)} AS ${q(TABLES.requests)} ENGINE = Null`);
  for (const t of SWAPPED_TABLES) await run(`CREATE TABLE ${q(shadow(t))} AS ${q(t)}`);
  // Each view's SELECT as the server stores it (names qualified by the database), reading the
  // Null source for `requests` and the shadow tables for the live targets.
  const renamed = new Map<string, string>([
    [TABLES.requests, SOURCE],
    ...SWAPPED_TABLES.map((t): [string, string] => [t, shadow(t)]),
  ]);
  for (const { view, to } of METRICS_VIEWS) {
    const select = views
      .get(view)!
      .replace(new RegExp(`\\b${db}\\.([A-Za-z_][A-Za-z0-9_]*)\\b`, 'g'), (m, name: string) =>
        renamed.has(name) ? q(renamed.get(name)!) : m,
      );
    await run(`CREATE MATERIALIZED VIEW ${q(shadow(view))} TO ${q(shadow(to))} AS ${select}`);
  }
  const [{ now } = { now: 0 }] = await rows<{ now: number }>(
    'SELECT toUnixTimestamp64Milli(now64(3)) AS now',
  );
  const cutoffMs = Number(now) + (options.marginMs ?? 1000);
  const cutoff = `fromUnixTimestamp64Milli(${cutoffMs}, 'UTC')`;
  await run(
    `CREATE MATERIALIZED VIEW ${q(FEED)} TO ${q(SOURCE)} AS SELECT * FROM ${q(TABLES.requests)} WHERE stored_at >= ${cutoff}`,
  );
  await options.onProgress?.({ step: 'prepared' });

  await waitForInsertsBefore(rows, cutoffMs);
  const [{ n } = { n: 0 }] = await rows<{ n: number | string }>(
    `SELECT count() AS n FROM ${q(TABLES.requests)} WHERE stored_at < ${cutoff}`,
  );
  await run(`INSERT INTO ${q(SOURCE)} SELECT * FROM ${q(TABLES.requests)} WHERE stored_at < ${cutoff}`, {
    insert_deduplicate: 0,
  });
  await options.onProgress?.({ step: 'backfilled' });
  log.info(
    { rows: Number(n), cutoff: new Date(cutoffMs).toISOString() },
    'metrics rebuilt into shadow tables',
  );

  await (options.swapLock ?? noViewInsertLock)(async () => {
    for (const t of SWAPPED_TABLES) {
      await run(`EXCHANGE TABLES ${q(t)} AND ${q(shadow(t))}`);
      await options.onProgress?.({ step: 'swapped', table: t });
    }
  });
  await cleanUp(run);
  log.info(
    { tables: METRICS_TARGETS, emptied: EMPTIED_TABLES },
    'metrics tables swapped for their rebuilt copies',
  );
  return {
    cutoff: new Date(cutoffMs).toISOString(),
    backfilled: Number(n),
    tables: METRICS_TARGETS,
    emptied: EMPTIED_TABLES,
  };
}

/** Every migration file must be applied: the views and tables are the current schema's. */
async function checkMigrated(
  rows: <T>(query: string, params?: Record<string, unknown>) => Promise<T[]>,
  database: string,
): Promise<void> {
  const files = fs
    .readdirSync(CH_MIGRATIONS_DIR)
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort();
  const [recorded] = await rows<{ n: number | string }>(
    `SELECT count() AS n FROM system.tables WHERE database = {db:String} AND name = {name:String}`,
    { db: database, name: TABLES.migrations },
  );
  const done = new Set(
    Number(recorded?.n ?? 0) > 0
      ? (await rows<{ name: string }>(`SELECT DISTINCT name FROM ${database}.${TABLES.migrations}`)).map(
          (r) => r.name,
        )
      : [],
  );
  const pending = files.filter((f) => !done.has(f));
  if (pending.length) {
    throw new RebuildRefused(
      `ClickHouse migrations not applied yet (${pending.join(', ')}): start the service once, then run rebuild-metrics`,
    );
  }
}

/**
 * Views and tables a migration has dropped since (011_consumer_endpoints_from_minutes.sql): a run
 * interrupted before that migration left their shadow copies, which the next run drops too.
 */
const RETIRED = { views: ['consumer_endpoints_rollup_mv'], tables: ['consumer_endpoints_rollup'] };

/** Drops the shadow views first (nothing writes into the shadow tables then), then the tables. */
async function cleanUp(run: (query: string) => Promise<unknown>): Promise<void> {
  await run(`DROP VIEW IF EXISTS ${FEED} SYNC`);
  for (const view of [...METRICS_VIEWS.map((v) => v.view), ...RETIRED.views])
    await run(`DROP VIEW IF EXISTS ${shadow(view)} SYNC`);
  for (const t of [...SWAPPED_TABLES, ...RETIRED.tables]) await run(`DROP TABLE IF EXISTS ${shadow(t)} SYNC`);
  await run(`DROP TABLE IF EXISTS ${SOURCE} SYNC`);
}

/**
 * Waits until the server's clock has passed `cutoffMs` and no INSERT that started before it is
 * still running: its rows have `stored_at < cutoff` and belong to the backfill, which must see them.
 */
async function waitForInsertsBefore(
  rows: <T>(query: string, params?: Record<string, unknown>) => Promise<T[]>,
  cutoffMs: number,
): Promise<void> {
  for (;;) {
    const [r] = await rows<{ now: number | string; running: number | string }>(
      `SELECT toUnixTimestamp64Milli(now64(3)) AS now,
              (SELECT count() FROM system.processes
               WHERE query_kind = 'Insert'
                 AND toUnixTimestamp64Milli(now64(3)) - elapsed * 1000 < {cutoff:Int64}) AS running`,
      { cutoff: cutoffMs },
    );
    if (r && Number(r.now) >= cutoffMs && Number(r.running) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
