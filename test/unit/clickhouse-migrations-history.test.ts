import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredRecord } from '../../services/processor/pipeline.js';
import { toRow } from '../../services/processor/row.mapper.js';
import {
  CH_MIGRATIONS_DIR,
  createClickHouse,
  migrateClickHouse,
  REBUILD_METRICS_AFTER,
  type ClickHouseClient,
} from '../../services/shared/clickhouse.js';
import {
  METRICS_TARGETS,
  rebuildMetrics,
  RebuildRefused,
  SWAPPED_TABLES,
} from '../../services/shared/clickhouse-rebuild.js';
import { TABLES } from '../../services/shared/tables.js';
import { sealConsumerRollup } from '../../services/shared/consumer-seal.js';
import { consumerStatsSql } from '../../services/api/consumers/consumer-stats.sql.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';

/**
 * ClickHouse migrations as forward-only schema changes, and `rebuild-metrics` (docs/operations.md
 * "Rebuilding the metrics"), against a real chDB. test/fixtures/clickhouse-migrations-before-history
 * holds the migration files installs applied in another form than today's: 002, 004–006 and 008
 * before they became schema-only (they emptied the aggregates and rebuilt them at start). The
 * history is those files and every other one as it is. From every earlier version, an upgrade
 * ends at the schema of a fresh install, re-runs nothing already applied, and after
 * `rebuild-metrics` holds the aggregates a fresh install computes from the same requests.
 */
const FIXTURE_DIR = path.join(import.meta.dirname, '..', 'fixtures', 'clickhouse-migrations-before-history');
const sqlFiles = (from: string) =>
  fs
    .readdirSync(from)
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort();
/** The files whose form as installs applied them differs from today's. */
const REWRITTEN = sqlFiles(FIXTURE_DIR);
const NEW_FILES = sqlFiles(CH_MIGRATIONS_DIR);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-chhistory-'));
/** Every migration file as installs applied it: the rewritten ones from the fixture, the rest as they are. */
const OLD_DIR = fs.mkdtempSync(path.join(dir, 'history-'));
for (const f of NEW_FILES) {
  const from = REWRITTEN.includes(f) ? FIXTURE_DIR : CH_MIGRATIONS_DIR;
  fs.copyFileSync(path.join(from, f), path.join(OLD_DIR, f));
}
const OLD_FILES = sqlFiles(OLD_DIR);
const cfg = embeddedClickHouse(path.join(dir, 'ch'));
const silent = pino({ level: 'silent' });
let ch: ClickHouseClient;
const NOW = Math.floor(Date.now() / 60_000) * 60_000;

beforeAll(() => {
  ch = createClickHouse(cfg);
});

afterAll(async () => {
  await ch?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function rows<T>(query: string): Promise<T[]> {
  return (await ch.query({ query, format: 'JSONEachRow' })).json<T>();
}

/** A logger whose warnings are collected as their messages. */
function collectingLog(): { log: typeof silent; warnings: string[] } {
  const warnings: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      warnings.push((JSON.parse(chunk.toString()) as { msg: string }).msg);
      done();
    },
  });
  return { log: pino({ level: 'warn' }, stream), warnings };
}

/** Drops every view and table of the database and the migrations record: an empty install. */
async function dropAll(): Promise<void> {
  const objects = await rows<{ name: string; engine: string }>(
    `SELECT name, engine FROM system.tables WHERE database = currentDatabase()
     ORDER BY engine = 'MaterializedView' DESC, name`,
  );
  for (const o of objects) {
    await ch.command({
      query: `DROP ${o.engine === 'MaterializedView' ? 'VIEW' : 'TABLE'} IF EXISTS ${o.name} SYNC`,
    });
  }
  await ch.command({ query: `DROP TABLE IF EXISTS ${cfg.database}.schema_migrations SYNC` });
}

/** The first `n` files of `from`, in a folder of their own (an install at that version). */
function filesUpTo(from: string, files: string[], n: number): string {
  const target = fs.mkdtempSync(path.join(dir, 'files-'));
  for (const f of files.slice(0, n)) fs.copyFileSync(path.join(from, f), path.join(target, f));
  return target;
}

/** `SHOW CREATE` of every table and view of the database, by name. */
async function schema(): Promise<Record<string, string>> {
  const all = await rows<{ name: string; q: string }>(
    `SELECT name, create_table_query AS q FROM system.tables WHERE database = currentDatabase() ORDER BY name`,
  );
  return Object.fromEntries(all.map((t) => [t.name, t.q]));
}

/**
 * Every aggregate table's rows after merging (FINAL), sorted (tables a version does not have yet
 * are left out): floats rounded (sums added in
 * another order differ in the last bits), aggregate states finalized, zero histogram entries left
 * out (sumMap keeps an entry whose counts sum to 0). The consumers' minute rows are the rows the
 * queries read: both minute tables through consumers_minute_all from 015 on
 * (015_consumer_minutes_by_hour.sql), `consumers_minute` before, summed per key under that name;
 * consumers_rollup's single minutes (the same minutes per consumer and environment, written before
 * 015 only) are left out.
 */
async function aggregates(seal = true): Promise<Record<string, unknown[]>> {
  // Every day and week block of consumers_rollup complete, as 8 days later
  // (012_consumer_day_blocks_sealed.sql); the seal's own row is left out below.
  if (seal) await sealConsumerRollup(ch, { retentionDays: 30, now: NOW + 8 * 86_400_000, from: 0 });
  const out: Record<string, unknown[]> = {};
  const columnsOf = (table: string) =>
    rows<{ name: string; type: string }>(
      `SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = '${table}'
       ORDER BY position`,
    );
  const value = (name: string, type: string) =>
    type.startsWith('AggregateFunction')
      ? `finalizeAggregation(${name})`
      : type.includes('Map(')
        ? `toString(mapFilter((k, v) -> v != 0, ${name}))`
        : type.includes('Float64')
          ? `round(${name}, 6)`
          : name;
  for (const table of METRICS_TARGETS) {
    if (table === TABLES.consumersMinuteByHour) continue;
    const columns = await columnsOf(table);
    if (columns.length === 0) continue;
    const select = columns.map(({ name, type }) => `${value(name, type)} AS ${name}`);
    const where = table === TABLES.consumersRollup ? "account_sid != '' AND level != 1" : "account_sid != ''";
    out[table] = await rows(`SELECT ${select.join(', ')} FROM ${table} FINAL WHERE ${where} ORDER BY ALL`);
  }
  // The minute rows: summed per key, as FINAL does within one table.
  const merged = (await columnsOf(TABLES.consumersMinute)).length
    ? TABLES.consumersMinute
    : TABLES.consumersMinuteBefore;
  const columns = await columnsOf(merged);
  if (columns.length) {
    const simple = /^SimpleAggregateFunction\((\w+), (.*)\)$/;
    const keys = columns.filter((c) => !simple.test(c.type)).map((c) => c.name);
    const select = columns.map(({ name, type }) => {
      const m = simple.exec(type);
      return `${m ? value(`${m[1]}(${name})`, m[2]!) : name} AS ${name}`;
    });
    out.consumers_minute = await rows(
      `SELECT ${select.join(', ')} FROM ${merged} WHERE account_sid != '' GROUP BY ${keys.join(', ')} ORDER BY ALL`,
    );
  }
  return out;
}

/** Records over the last 3 days, 3 environments, 4 consumers and records without one. */
function record(i: number, withConsumer: boolean): StoredRecord {
  const consumer = withConsumer && i % 5 !== 4 ? { id: `cus_${i % 4}`, name: `Name ${i % 4}` } : undefined;
  return {
    sid: `req_${String(i).padStart(27, '0')}`,
    accountSid: 'acc_history',
    bucketSid: 'bkt_history',
    environmentSid: ['prod01', 'stag01', 'devl01'][i % 3],
    contextSid: null,
    direction: 'in',
    createdAt: new Date(NOW - i * 517_000).toISOString(),
    receivedAt: new Date().toISOString(),
    endpoint: `/v1/things/${i % 4}`,
    request: { method: i % 2 ? 'post' : 'get', host: 'api.example.com', path: `/v1/things/${i}`, body: null },
    response: { statusCode: i % 7 === 0 ? 503 : i % 11 === 0 ? 404 : 200, body: null },
    timings: { duration: i % 17 === 0 ? null : 2 + ((i * 37) % 311) * 1.3 },
    tags: [],
    firewall: { blocked: i % 13 === 0 },
    ...(consumer ? { consumer } : {}),
  } as StoredRecord;
}

/**
 * Stores records `from`..`to` in `requests` in blocks of 100, as the processor does (the views
 * aggregate each block); columns the table does not have yet (an older version) are left out.
 */
async function store(from: number, to: number, withConsumer: boolean): Promise<void> {
  for (let start = from; start < to; start += 100) {
    const end = Math.min(to, start + 100);
    const values = [];
    for (let i = start; i < end; i++) values.push(toRow(record(i, withConsumer), 0, i));
    await ch.insert({
      table: 'requests',
      values,
      format: 'JSONEachRow',
      clickhouse_settings: { input_format_skip_unknown_fields: 1, insert_deduplicate: 0 },
    });
  }
}

/**
 * The consumers list over the records' span from single minutes alone (consumer-stats.sql.ts, no
 * seal instant): before 015 consumers_rollup's level-1 rows, since then consumers_minute_by_hour.
 */
async function consumersList(): Promise<unknown[]> {
  const scope = {
    accountSid: 'acc_history',
    bucketSid: 'bkt_history',
    range: { start: NOW - 5 * 86_400_000, end: NOW + 60_000 },
    sealed: { days: null, hours: null },
  };
  return (await ch.query({ ...consumerStatsSql(scope, 30, [], {}), format: 'JSONEachRow' })).json();
}

let freshSchema: Record<string, string>;
const expected: Record<'with' | 'without', Record<string, unknown[]>> = { with: {}, without: {} };
let expectedList: unknown[] = [];

describe('ClickHouse migrations that read like history (chDB)', () => {
  it('a fresh install has the same schema as with the migrations before they became schema-only', async () => {
    // The fixture holds rewritten files only: each is a migration of today's, in another form.
    expect(REWRITTEN.length).toBeGreaterThan(0);
    for (const f of REWRITTEN) {
      expect(NEW_FILES, f).toContain(f);
      expect(fs.readFileSync(path.join(FIXTURE_DIR, f), 'utf8'), f).not.toBe(
        fs.readFileSync(path.join(CH_MIGRATIONS_DIR, f), 'utf8'),
      );
    }
    expect(await migrateClickHouse(ch, cfg, silent, undefined, OLD_DIR)).toBe(OLD_FILES.length);
    const before = await schema();
    await dropAll();
    expect(await migrateClickHouse(ch, cfg, silent)).toBe(NEW_FILES.length);
    freshSchema = await schema();
    expect(Object.keys(freshSchema).length).toBeGreaterThan(15);
    expect(freshSchema).toEqual(before);
    // No migration file empties a table or rebuilds data any more.
    for (const f of NEW_FILES) {
      const sql = fs.readFileSync(path.join(CH_MIGRATIONS_DIR, f), 'utf8');
      expect(sql, f).not.toMatch(/^\s*(TRUNCATE|INSERT)\b/im);
    }
  }, 120_000);

  it('the aggregates of a fresh install, with and without consumers (the reference for the upgrades)', async () => {
    await store(0, 700, false);
    expected.without = await aggregates();
    expect(expected.without.requests_minute!.length).toBeGreaterThan(100);
    await dropAll();
    expect(await migrateClickHouse(ch, cfg, silent)).toBe(NEW_FILES.length);
    await store(0, 700, true);
    expected.with = await aggregates();
    expectedList = await consumersList();
    expect(expectedList).toHaveLength(4);
    expect(expected.with.consumers_rollup!.length).toBeGreaterThan(50);
    expect(expected.with.requests_key_rollup!.length).toBeGreaterThan(50);
  }, 120_000);

  for (let version = 3; version <= OLD_FILES.length; version++) {
    it(`an install at migration ${String(version).padStart(3, '0')} with stored requests upgrades to the fresh schema, and rebuild-metrics gives the fresh aggregates`, async () => {
      await dropAll();
      const at = filesUpTo(OLD_DIR, OLD_FILES, version);
      expect(await migrateClickHouse(ch, cfg, silent, undefined, at)).toBe(version);
      // The consumer columns exist from 007 on.
      const withConsumer = version >= 7;
      await store(0, 700, withConsumer);
      // The stored rows, unsealed: the seal is the current code's, which reads the current schema.
      const atVersion = await aggregates(false);

      const { log, warnings } = collectingLog();
      expect(await migrateClickHouse(ch, cfg, log)).toBe(NEW_FILES.length - version);
      expect(await schema()).toEqual(freshSchema);
      // From 008 on (the rollup's single minutes) the consumers list is a fresh install's at once.
      if (version >= 8) expect(await consumersList()).toEqual(expectedList);
      if (!NEW_FILES.slice(version).some((f) => REBUILD_METRICS_AFTER.has(f))) {
        // The previous schema, or one whose later migrations change no aggregate: nothing runs
        // again, no stored row changes, nothing to rebuild; sealed, the aggregates are a fresh
        // install's.
        expect(warnings).toEqual([]);
        expect(await aggregates(false)).toEqual(atVersion);
        expect(await aggregates()).toEqual(expected.with);
      } else {
        expect(warnings).toEqual([expect.stringMatching(/npm run admin -- rebuild-metrics/)]);
      }

      const result = await rebuildMetrics(ch, cfg, silent, { marginMs: 200 });
      expect(result.backfilled).toBe(700);
      expect(await aggregates()).toEqual(withConsumer ? expected.with : expected.without);
      // The swapped tables are the live schema's, and nothing of the rebuild is left.
      expect(await schema()).toEqual(freshSchema);
      // The views feed the rebuilt tables.
      await store(700, 710, withConsumer);
      const [minute] = await rows<{ n: number }>('SELECT toInt64(sum(requests)) AS n FROM requests_minute');
      const [day] = await rows<{ n: number }>(
        "SELECT toInt64(sum(requests)) AS n FROM requests_rollup WHERE dim = 'all' AND level = 1440 AND environment_sid = '*'",
      );
      expect([Number(minute!.n), Number(day!.n)]).toEqual([710, 710]);
    }, 180_000);
  }

  it('rebuild-metrics while requests keep arriving: every request counted once, before, during and after each swap', async () => {
    await dropAll();
    await migrateClickHouse(ch, cfg, silent);
    await store(0, 500, true);
    // A leftover of an interrupted run (a shadow table with rows) is cleared, not merged.
    await ch.command({ query: 'CREATE TABLE requests_minute_rebuild AS requests_minute' });
    await ch.command({ query: 'INSERT INTO requests_minute_rebuild SELECT * FROM requests_minute' });
    // So is the shadow of a table a later migration dropped (011: consumer_endpoints_rollup).
    await ch.command({ query: 'CREATE TABLE consumer_endpoints_rollup_rebuild AS consumers_rollup' });

    let next = 500;
    const steps: string[] = [];
    await rebuildMetrics(ch, cfg, silent, {
      marginMs: 300,
      onProgress: async ({ step, table }) => {
        steps.push(table ? `${step} ${table}` : step);
        // Requests stored before the cutoff (prepared), after it (backfilled) and between swaps.
        await store(next, next + 20, true);
        next += 20;
      },
    });
    expect(steps).toEqual(['prepared', 'backfilled', ...SWAPPED_TABLES.map((t) => `swapped ${t}`)]);
    expect(next).toBe(500 + 20 * (2 + SWAPPED_TABLES.length));
    const during = await aggregates();
    const [minute] = await rows<{ n: number }>('SELECT toInt64(sum(requests)) AS n FROM requests_minute');
    expect(Number(minute!.n)).toBe(next);

    // The same requests rebuilt with nothing arriving (the path the upgrade tests check against a
    // fresh install) give the same aggregates.
    await rebuildMetrics(ch, cfg, silent, { marginMs: 0 });
    expect(await aggregates()).toEqual(during);
    expect(await schema()).toEqual(freshSchema);
  }, 180_000);

  it('refuses on a cluster, before the migrations are applied, and beside a view it does not know', async () => {
    await expect(rebuildMetrics(ch, { ...cfg, cluster: 'tapline_cluster' }, silent)).rejects.toThrow(
      new RebuildRefused(
        'rebuild-metrics does not run on a cluster (CLICKHOUSE_CLUSTER=tapline_cluster): the swap of a table with its rebuilt copy is not atomic across shards',
      ),
    );
    // The newest migration not applied yet (a service upgraded, not started).
    const newest = NEW_FILES.at(-1)!;
    await ch.command({
      query: `ALTER TABLE ${cfg.database}.schema_migrations DELETE WHERE name = {f:String}`,
      query_params: { f: newest },
      clickhouse_settings: { mutations_sync: '2' },
    });
    await expect(rebuildMetrics(ch, cfg, silent)).rejects.toThrow(
      new RegExp(`ClickHouse migrations not applied yet \\(${newest.replace('.', '\\.')}\\)`),
    );
    await migrateClickHouse(ch, cfg, silent);
    await ch.command({
      query: 'CREATE MATERIALIZED VIEW other_mv TO requests_minute AS SELECT * FROM requests_minute',
    });
    await expect(rebuildMetrics(ch, cfg, silent)).rejects.toThrow(
      /views are not the ones .*unknown: other_mv/,
    );
    await ch.command({ query: 'DROP VIEW other_mv SYNC' });
    expect(await schema()).toEqual(freshSchema);
  }, 120_000);
});
