import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredRecord } from '../../services/processor/pipeline.js';
import { RequestsWriter } from '../../services/processor/requests.writer.js';
import { toRow } from '../../services/processor/row.mapper.js';
import {
  CH_MIGRATIONS_DIR,
  createClickHouse,
  migrateClickHouse,
  splitStatements,
  type ClickHouseClient,
} from '../../services/shared/clickhouse.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';

/**
 * Issue 14 point 9: ClickHouse migrations against a real chDB. Several migrators at once are
 * serialised (each migration is applied and recorded once), a migration applied again (a second
 * run, or a re-run after an interrupted one) leaves the stored data and the aggregates as they
 * were.
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-chmig-'));
const cfg = embeddedClickHouse(dir);
const log = pino({ level: 'silent' });
let ch: ClickHouseClient;
const FILES = fs
  .readdirSync(CH_MIGRATIONS_DIR)
  .filter((f) => /^\d+_.*\.sql$/.test(f))
  .sort();

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

async function recorded(): Promise<string[]> {
  return (await rows<{ name: string }>('SELECT name FROM tapline.schema_migrations ORDER BY name')).map(
    (r) => r.name,
  );
}

/**
 * Request counts as the raw table, the minute aggregate and the rollup see them: the 10-minute
 * level with its histograms, and the other levels' request counts (each holds every request once),
 * in the rows per environment. The rows for all environments together
 * (006_duration_grid_all_environments.sql) must hold the same figures: checked on every call.
 */
async function counts(): Promise<{
  raw: number;
  minute: number;
  rollup: number;
  hist: number;
  levels: number[];
}> {
  const [raw] = await rows<{ n: number }>('SELECT count() AS n FROM requests');
  const [minute] = await rows<{ n: number }>('SELECT sum(requests) AS n FROM requests_minute');
  const rollupOf = async (env: string) => {
    const [rollup] = await rows<{ n: number; h: number }>(
      `SELECT sum(requests) AS n, sum(arraySum(mapValues(duration_hist))) AS h FROM requests_rollup
       WHERE dim = 'all' AND level = 10 AND environment_sid ${env}`,
    );
    const levels = await rows<{ n: number }>(
      `SELECT sum(requests) AS n FROM requests_rollup WHERE dim = 'all' AND level IN (60, 360, 1440)
       AND environment_sid ${env} GROUP BY level ORDER BY level`,
    );
    return { rollup: Number(rollup!.n), hist: Number(rollup!.h), levels: levels.map((l) => Number(l.n)) };
  };
  const perEnvironment = await rollupOf("!= '*'");
  expect(await rollupOf("= '*'"), 'the all-environments rollup rows').toEqual(perEnvironment);
  return { raw: Number(raw!.n), minute: Number(minute!.n), ...perEnvironment };
}

function record(i: number): StoredRecord {
  return {
    sid: `req_${String(i).padStart(27, '0')}`,
    accountSid: 'acc_migrate',
    bucketSid: 'bkt_migrate',
    environmentSid: i % 3 === 0 ? 'stag01' : 'prod01',
    contextSid: null,
    direction: 'in',
    createdAt: new Date(Date.now() - (i % 50) * 60_000).toISOString(),
    receivedAt: new Date().toISOString(),
    endpoint: `/v1/things/${i % 3}`,
    request: { method: 'get', host: 'api.example.com', path: `/v1/things/${i}`, body: null },
    response: { statusCode: i % 7 === 0 ? 500 : 200, body: null },
    timings: { duration: 10 + (i % 13) },
    tags: [],
    firewall: { blocked: false },
  } as StoredRecord;
}

describe('ClickHouse migrations (chDB)', () => {
  it('two migrators started at once apply and record every migration once', async () => {
    const results = await Promise.all([migrateClickHouse(ch, cfg, log), migrateClickHouse(ch, cfg, log)]);
    expect(results.reduce((a, b) => a + b, 0)).toBe(FILES.length);
    expect(await recorded()).toEqual(FILES);
  }, 120_000);

  it('stored data and aggregates survive further runs, in a row and at once', async () => {
    const writer = new RequestsWriter(ch);
    await writer.insert(
      Array.from({ length: 300 }, (_, i) => toRow(record(i), 0, i)),
      'unit:migrate:0-299',
    );
    const before = await counts();
    expect(before).toEqual({ raw: 300, minute: 300, rollup: 300, hist: 300, levels: [300, 300, 300] });

    expect(await migrateClickHouse(ch, cfg, log)).toBe(0);
    expect(await migrateClickHouse(ch, cfg, log)).toBe(0);
    expect(await counts()).toEqual(before);

    // The last migration is forgotten, as after an upgrade that brings it or a run interrupted
    // before it was recorded: two processes start.
    const last = FILES[FILES.length - 1]!;
    await ch.command({
      query: `ALTER TABLE tapline.schema_migrations DELETE WHERE name = '${last}'`,
      clickhouse_settings: { mutations_sync: '2' },
    });
    const applied = await Promise.all([migrateClickHouse(ch, cfg, log), migrateClickHouse(ch, cfg, log)]);
    expect(applied.reduce((a, b) => a + b, 0)).toBe(1);
    expect(await recorded()).toEqual(FILES);
    expect(await counts()).toEqual(before);
  }, 180_000);

  it('every migration can be applied a second time without losing or doubling data', async () => {
    const before = await counts();
    await ch.command({
      query: 'TRUNCATE TABLE tapline.schema_migrations',
    });
    expect(await migrateClickHouse(ch, cfg, log)).toBe(FILES.length);
    expect(await recorded()).toEqual(FILES);
    expect(await counts()).toEqual(before);
    // The views still aggregate new rows once.
    await new RequestsWriter(ch).insert([toRow(record(1000), 0, 1000)], 'unit:migrate:1000');
    expect(await counts()).toEqual({
      raw: before.raw + 1,
      minute: before.minute + 1,
      rollup: before.rollup + 1,
      hist: before.hist + 1,
      levels: before.levels.map((n) => n + 1),
    });
  }, 180_000);

  it('016 gives requests granules of 1 MiB and keeps every stored row, also after a run interrupted before or after its swap', async () => {
    const file = '016_requests_small_granules.sql';
    const statements = splitStatements(
      fs.readFileSync(path.join(CH_MIGRATIONS_DIR, file), 'utf8').replaceAll('${RETENTION_DAYS}', '30'),
    );
    expect(statements[3]).toBe('EXCHANGE TABLES requests AND requests_regranulated');
    const before = await counts();
    const state = async () => ({
      requests: (
        await rows<{ q: string }>(
          "SELECT create_table_query AS q FROM system.tables WHERE database = currentDatabase() AND name = 'requests'",
        )
      )[0]!.q.match(/index_granularity_bytes = \d+/g),
      leftovers: await rows<{ name: string }>(
        "SELECT name FROM system.tables WHERE database = currentDatabase() AND name LIKE 'requests_regranulated%'",
      ),
      counts: await counts(),
    });
    const done = { requests: ['index_granularity_bytes = 1048576'], leftovers: [], counts: before };
    expect(await state()).toEqual(done);
    // Interrupted with the copy filled but not swapped in, then with the names swapped but the old
    // table not dropped: the next start applies the file again from its first statement.
    for (const upTo of [3, 4]) {
      for (const sql of statements.slice(0, upTo)) await ch.command({ query: sql });
      await ch.command({
        query: `ALTER TABLE tapline.schema_migrations DELETE WHERE name = '${file}'`,
        clickhouse_settings: { mutations_sync: '2' },
      });
      expect(await migrateClickHouse(ch, cfg, log)).toBe(1);
      expect(await state(), `interrupted after ${upTo} statements`).toEqual(done);
    }
    // The views read the replaced table: new rows are aggregated once.
    await new RequestsWriter(ch).insert([toRow(record(2000), 0, 2000)], 'unit:migrate:2000');
    expect((await counts()).minute).toBe(before.minute + 1);
    // The parts written since have granules of at most 1 MiB: a record of ~40 KB ends its granule
    // after ~26 rows instead of ~260.
    const big = Array.from({ length: 600 }, (_, i) => {
      const r = record(3000 + i);
      return toRow(
        { ...r, request: { ...r.request, body: 'x'.repeat(40_000) } } as StoredRecord,
        0,
        3000 + i,
      );
    });
    await new RequestsWriter(ch).insert(big, 'unit:migrate:3000-3599');
    const [part] = await rows<{ marks: number; rows: number }>(
      `SELECT marks, rows FROM system.parts WHERE database = currentDatabase() AND table = 'requests'
       AND active ORDER BY modification_time DESC, rows DESC LIMIT 1`,
    );
    expect(Number(part!.rows)).toBeGreaterThanOrEqual(300);
    expect(Number(part!.marks)).toBeGreaterThan(Number(part!.rows) / 30);
  }, 180_000);

  it('a changed RETENTION_DAYS moves the TTL of the raw table and of every aggregate at the next start', async () => {
    /** Days of each table's TTL, read from its DDL as the server holds it now. */
    const ttls = async () =>
      Object.fromEntries(
        (
          await rows<{ name: string; q: string }>(
            `SELECT name, create_table_query AS q FROM system.tables WHERE database = currentDatabase()
             AND name IN ('requests', 'requests_minute', 'requests_rollup', 'excluded_minute') ORDER BY name`,
          )
        ).map((t) => [t.name, /TTL .*toIntervalDay\((\d+)\)/.exec(t.q)?.[1]]),
      );
    const all = (days: string) => ({
      excluded_minute: days,
      requests: days,
      requests_minute: days,
      requests_rollup: days,
    });
    expect(await ttls()).toEqual(all('30'));
    const before = await counts();
    // The records are at most 50 minutes old: a week's retention keeps every one of them.
    expect(await migrateClickHouse(ch, { ...cfg, retentionDays: 7 }, log)).toBe(0);
    expect(await ttls()).toEqual(all('7'));
    expect(await counts()).toEqual(before);
    expect(await migrateClickHouse(ch, cfg, log)).toBe(0);
    expect(await ttls()).toEqual(all('30'));
  }, 120_000);
});
