import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import {
  startClickHouseServer,
  type ClickHouseServerHandle,
} from '../../infra/local/clickhouse-server.launcher.js';
import {
  createClickHouse,
  migrateClickHouse,
  type ClickHouseClient,
} from '../../services/shared/clickhouse.js';
import { ensureClickHouseDatabase } from '../../services/shared/clickhouse-database.js';
import type { Config } from '../../services/shared/config.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';
import { freePort, ROOT } from '../helpers/service-process.js';

/**
 * A shorter RETENTION_DAYS shrinks what is stored at the next start, in both ClickHouse modes:
 * records created 20 and 2 days ago are stored under a 30-day retention (straight into `requests`,
 * as the bench's large sets are; the materialized views fill the minute and rollup aggregates),
 * then the ClickHouse side of a start (the migrations and the retention) runs with
 * RETENTION_DAYS=10. The old records and their aggregates are gone, the old day's partition of
 * `requests` is dropped (no part of it left in system.parts), and the recent records stay. With an
 * unchanged RETENTION_DAYS, a start drops the partitions already past it.
 */
const log = pino({ level: 'silent' });
const dirs: string[] = [];
const servers: ClickHouseServerHandle[] = [];
const clients: ClickHouseClient[] = [];

/** Closes every client opened so far: chDB opens one data directory per process at a time. */
async function closeClients(): Promise<void> {
  await Promise.all(clients.splice(0).map((c) => c.close()));
}

afterAll(async () => {
  await closeClients();
  await Promise.all(servers.map((s) => s.stop()));
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const ACCOUNT = 'acc_retention';
const PER_DAY = 2000;

async function rows<T>(ch: ClickHouseClient, query: string): Promise<T[]> {
  return (await ch.query({ query, format: 'JSONEachRow' })).json<T>();
}

/** `n` records created `daysAgo` days ago (spread over an hour), straight into `requests`. */
async function insertRecords(ch: ClickHouseClient, daysAgo: number, n: number): Promise<void> {
  await ch.command({
    query: `INSERT INTO requests
      (account_sid, bucket_sid, sid, environment_sid, context_sid, direction, created_at, received_at,
       method, host, path, endpoint, status_code, duration, request_size, response_size, blocked, tags,
       record, kafka_partition, kafka_offset)
    SELECT '${ACCOUNT}', 'bkt_retention', concat('req_${daysAgo}_', toString(number)), 'env_1', '', 'in',
      t, t, 'GET', 'api.example.com', concat('/orders/', toString(number)), '/orders/{id}',
      if(number % 10 = 0, 500, 200), 10 + number % 90, 0, 300, 0, map('release', '1'),
      concat('{"sid":"req_', toString(number), '","pad":"', repeat('x', 200), '"}'), 0, number
    FROM (SELECT number, now64(3, 'UTC') - toIntervalDay(${daysAgo}) - toIntervalSecond(number % 3600) AS t
          FROM numbers(${n}))`,
  });
}

interface Counts {
  requests: number;
  minute: number;
  rollup: number;
}

/** Rows older than `days` days in `requests` and its aggregates (their sums of requests). */
async function olderThan(ch: ClickHouseClient, days: number, newer = false): Promise<Counts> {
  const cmp = newer ? '>=' : '<';
  const [r] = await rows<{ requests: string; minute: string; rollup: string }>(
    ch,
    `SELECT
       (SELECT count() FROM requests WHERE account_sid = '${ACCOUNT}'
          AND created_at ${cmp} now64(3) - toIntervalDay(${days})) AS requests,
       (SELECT sum(requests) FROM requests_minute WHERE account_sid = '${ACCOUNT}'
          AND minute ${cmp} now() - toIntervalDay(${days})) AS minute,
       (SELECT count() FROM requests_rollup WHERE account_sid = '${ACCOUNT}'
          AND t ${cmp} now() - toIntervalDay(${days})) AS rollup`,
  );
  return { requests: Number(r!.requests), minute: Number(r!.minute), rollup: Number(r!.rollup) };
}

/** Active parts of `requests` by partition (a day each). */
async function requestParts(ch: ClickHouseClient): Promise<Map<string, number>> {
  const parts = await rows<{ partition_id: string; rows: string }>(
    ch,
    `SELECT partition_id, sum(rows) AS rows FROM system.parts
     WHERE database = currentDatabase() AND table = 'requests' AND active GROUP BY partition_id`,
  );
  return new Map(parts.map((p) => [p.partition_id, Number(p.rows)]));
}

const dayId = (daysAgo: number) =>
  new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10).replaceAll('-', '');

/** Stores both sets under 30 days, "restarts" under 10 and checks what is left. */
async function shrinks(open: (retentionDays: number) => Promise<[ClickHouseClient, Config['clickhouse']]>) {
  const [first, cfg30] = await open(30);
  await migrateClickHouse(first, cfg30, log);
  // An hour's margin from the day boundary keeps each set inside one daily partition.
  await insertRecords(first, 20, PER_DAY);
  await insertRecords(first, 2, PER_DAY);
  const before = await olderThan(first, 10);
  expect(before.requests).toBe(PER_DAY);
  expect(before.minute).toBe(PER_DAY);
  expect(before.rollup).toBeGreaterThan(0);
  const oldDay = dayId(20);
  expect([...(await requestParts(first)).keys()]).toContain(oldDay);
  await closeClients();

  const [ch, cfg10] = await open(10);
  await migrateClickHouse(ch, cfg10, log);
  expect(await olderThan(ch, 10)).toEqual({ requests: 0, minute: 0, rollup: 0 });
  const kept = await olderThan(ch, 10, true);
  expect(kept.requests).toBe(PER_DAY);
  expect(kept.minute).toBe(PER_DAY);
  expect(kept.rollup).toBeGreaterThan(0);
  const parts = await requestParts(ch);
  expect(parts.has(oldDay)).toBe(false);
  expect([...parts.values()].reduce((a, b) => a + b, 0)).toBe(PER_DAY);
  const ttl = await rows<{ q: string }>(
    ch,
    `SELECT create_table_query AS q FROM system.tables WHERE database = currentDatabase() AND name = 'requests'`,
  );
  expect(ttl[0]!.q).toContain('toIntervalDay(10)');
}

/**
 * RETENTION_DAYS unchanged: records that are past it when written (as records of a day that expired
 * while Tapline was stopped are, at the next start) leave no partition behind after a start.
 */
async function expiredDropped(
  open: (retentionDays: number) => Promise<[ClickHouseClient, Config['clickhouse']]>,
) {
  const [first, cfg] = await open(10);
  await migrateClickHouse(first, cfg, log);
  await insertRecords(first, 20, PER_DAY);
  await insertRecords(first, 2, PER_DAY);
  expect([...(await requestParts(first)).keys()]).toContain(dayId(20));
  await closeClients();

  const [ch, again] = await open(10);
  await migrateClickHouse(ch, again, log);
  const parts = await requestParts(ch);
  expect(parts.has(dayId(20))).toBe(false);
  expect(parts.get(dayId(2))).toBe(PER_DAY);
  expect((await olderThan(ch, 10)).requests).toBe(0);
}

describe('RETENTION_DAYS shrinks the stored data at the next start', () => {
  it('embedded (chDB): old rows, their aggregates and their partition are gone; recent ones stay', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-retention-'));
    dirs.push(dir);
    await shrinks(async (days) => {
      await closeClients();
      const cfg = { ...embeddedClickHouse(dir), retentionDays: days };
      const ch = createClickHouse(cfg);
      clients.push(ch);
      return [ch, cfg];
    });
  });

  it('server mode: the same on the local ClickHouse server, restarted in between', async () => {
    const dataDir = path.join(ROOT, '.cache', `retention-${Date.now()}-${process.pid}`);
    dirs.push(dataDir);
    const [httpPort, tcpPort] = [await freePort(), await freePort()];
    let server: ClickHouseServerHandle | undefined;
    await shrinks(async (days) => {
      if (server) await server.stop();
      server = await startClickHouseServer({
        cacheDir: path.join(ROOT, '.cache'),
        dataDir,
        httpPort,
        tcpPort,
        log,
      });
      servers.push(server);
      const cfg: Config['clickhouse'] = {
        ...embeddedClickHouse(dataDir),
        url: server.url,
        mode: 'server',
        retentionDays: days,
      };
      await ensureClickHouseDatabase(cfg);
      const ch = createClickHouse(cfg);
      clients.push(ch);
      return [ch, cfg];
    });
  });

  it('a start drops the partitions past an unchanged retention (chDB)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-retention-'));
    dirs.push(dir);
    await expiredDropped(async (days) => {
      await closeClients();
      const cfg = { ...embeddedClickHouse(dir), retentionDays: days };
      const ch = createClickHouse(cfg);
      clients.push(ch);
      return [ch, cfg];
    });
  });
});
