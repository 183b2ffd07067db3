import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startClickHouseServer } from '../../infra/local/clickhouse-server.launcher.js';
import type { StoredRecord } from '../../services/processor/pipeline.js';
import { RequestsWriter } from '../../services/processor/requests.writer.js';
import { toRow, type RequestRow } from '../../services/processor/row.mapper.js';
import {
  createClickHouse,
  migrateClickHouse,
  type ClickHouseClient,
} from '../../services/shared/clickhouse.js';
import { ensureClickHouseDatabase } from '../../services/shared/clickhouse-database.js';
import {
  REQUESTS_COLUMNS,
  REQUESTS_DELETED_COLUMNS,
  REQUESTS_INSERT_COLUMNS,
  REQUESTS_INSERT_STRUCTURE,
  REQUESTS_INSERTED,
} from '../../services/shared/requests-row.js';
import { TABLES } from '../../services/shared/tables.js';
import { testEnv } from '../helpers/client.js';
import { freePort, ROOT } from '../helpers/service-process.js';

/**
 * The requests row's column table (services/shared/requests-row.ts) against the `requests` table
 * the ClickHouse migrations build, on the embedded engine (chDB, its own directory) and on a
 * ClickHouse server: the test stack's own when it runs one (TEST_STACK=containers), else a server
 * process started from the same engine (infra/local/clickhouse-server.launcher.ts). Each engine is
 * migrated from scratch, then asked what it has (`system.columns`, DESCRIBE), and rows encoded by
 * the derived RowBinary encoder go through the processor's insert and are read back column by column.
 */
const log = pino({ level: 'silent' });
const baseCfg = {
  url: undefined as string | undefined,
  path: '',
  database: 'tapline',
  user: 'default',
  password: '',
  retentionDays: 30,
  mode: 'embedded' as 'embedded' | 'server',
  httpPort: 0,
  tcpPort: 0,
};

interface Engine {
  ch: ClickHouseClient;
  close(): Promise<void>;
}

async function chdbEngine(): Promise<Engine> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-rowlayout-'));
  const cfg = { ...baseCfg, path: dir };
  const ch = createClickHouse(cfg);
  await migrateClickHouse(ch, cfg, log);
  return {
    ch,
    close: async () => {
      await ch.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A fresh database on the stack's ClickHouse server, or a server process of our own. */
async function serverEngine(): Promise<Engine> {
  const stackUrl = testEnv().serviceEnv.CLICKHOUSE_URL;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-rowlayout-server-'));
  const server = stackUrl
    ? undefined
    : await startClickHouseServer({
        cacheDir: path.join(ROOT, '.cache'),
        dataDir: dir,
        httpPort: await freePort(),
        tcpPort: await freePort(),
        log,
      });
  const cfg = {
    ...baseCfg,
    url: stackUrl ?? server!.url,
    mode: 'server' as const,
    database: `tapline_rowlayout_${process.pid}_${Date.now()}`,
  };
  await ensureClickHouseDatabase(cfg);
  const ch = createClickHouse(cfg);
  await migrateClickHouse(ch, cfg, log);
  return {
    ch,
    close: async () => {
      try {
        await ch.command({ query: `DROP DATABASE IF EXISTS ${cfg.database}` });
        await ch.close();
      } finally {
        await server?.stop();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

interface SystemColumn {
  name: string;
  type: string;
  default_kind: string;
  default_expression: string;
  compression_codec: string;
}

async function systemColumns(ch: ClickHouseClient, table: string): Promise<SystemColumn[]> {
  const rs = await ch.query({
    query: `SELECT name, type, default_kind, default_expression, compression_codec FROM system.columns
            WHERE database = currentDatabase() AND table = {t:String} ORDER BY position`,
    query_params: { t: table },
    format: 'JSONEachRow',
  });
  return rs.json<SystemColumn>();
}

/** The type a RowBinary block carries for a column of this type (LowCardinality is the same bytes). */
const wireType = (type: string) => type.replace(/^LowCardinality\((.*)\)$/, '$1');

function record(i: number, over: Partial<StoredRecord> = {}): StoredRecord {
  return {
    sid: `req_layout${String(i).padStart(21, '0')}`,
    accountSid: 'acc_layout',
    bucketSid: `bkt_layout${i}`,
    environmentSid: `env${i}`,
    contextSid: `ctx${i}`,
    direction: i % 2 ? 'out' : 'in',
    createdAt: `2026-11-2${i}T10:00:0${i}.12${i}Z`,
    receivedAt: `2026-11-2${i}T10:00:1${i}.45${i}Z`,
    endpoint: `/v1/things${i}/{id}`,
    request: { method: 'patch', host: `h${i}.example.com`, path: `/v1/things${i}/${i}`, body: 'x'.repeat(i) },
    response: { statusCode: 200 + i, body: 'y'.repeat(10 * i) },
    timings: { duration: 1.5 * i },
    tags: [{ key: `k${i}`, value: `v${i}` }],
    firewall: { blocked: i % 2 === 1 },
    ...over,
  } as StoredRecord;
}

/** Each inserted column read back as the value its `RequestRow` property holds. */
async function readBack(ch: ClickHouseClient, sid: string): Promise<Record<string, unknown>> {
  const select = REQUESTS_INSERTED.map((c) =>
    c.type.startsWith('DateTime64') ? `toUnixTimestamp64Milli(${c.name}) AS ${c.name}` : c.name,
  ).join(', ');
  const rs = await ch.query({
    query: `SELECT ${select} FROM ${TABLES.requests} WHERE sid = {sid:String}`,
    query_params: { sid },
    format: 'JSONEachRow',
  });
  const rows = await rs.json<Record<string, unknown>>();
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

function expected(row: RequestRow): Record<string, unknown> {
  return Object.fromEntries(
    REQUESTS_INSERTED.map((c) => {
      const v = row[c.field];
      return [c.name, Buffer.isBuffer(v) ? v.toString('utf8') : v];
    }),
  );
}

describe.each([
  { engine: 'chDB', start: chdbEngine },
  { engine: 'a ClickHouse server', start: serverEngine },
])('the requests row layout on $engine', ({ start }) => {
  let engine: Engine | undefined;
  const ch = () => engine!.ch;

  beforeAll(async () => {
    engine = await start();
  }, 300_000);

  afterAll(async () => {
    await engine?.close();
  });

  it('the column table is the table the migrations build: names, types, order, defaults, codecs', async () => {
    expect(await systemColumns(ch(), TABLES.requests)).toEqual(
      REQUESTS_COLUMNS.map((c) => ({
        name: c.name,
        type: c.type,
        default_kind: 'default' in c ? 'DEFAULT' : '',
        default_expression: 'default' in c ? c.default : '',
        compression_codec: 'codec' in c ? `CODEC(${c.codec})` : '',
      })),
    );
  });

  it('the insert writes every column ClickHouse does not fill, in table order', async () => {
    const table = await systemColumns(ch(), TABLES.requests);
    const filled = table.filter((c) => c.default_kind === '');
    expect(filled.length).toBeLessThan(table.length);
    expect(REQUESTS_INSERTED.map((c) => c.name)).toEqual(filled.map((c) => c.name));
    expect(REQUESTS_INSERTED.map((c) => c.type)).toEqual(filled.map((c) => c.type));
    expect(REQUESTS_INSERT_COLUMNS).toBe(filled.map((c) => c.name).join(', '));
  });

  it("the RowBinary block's structure names the inserted columns with their types", async () => {
    const rs = await ch().query({
      query: `DESCRIBE TABLE format(RowBinary, '${REQUESTS_INSERT_STRUCTURE}', '')`,
      format: 'JSONEachRow',
    });
    const described = await rs.json<{ name: string; type: string }>();
    const table = (await systemColumns(ch(), TABLES.requests)).filter((c) => c.default_kind === '');
    expect(described.map(({ name, type }) => ({ name, type }))).toEqual(
      table.map((c) => ({ name: c.name, type: wireType(c.type) })),
    );
  });

  it('requests_deleted takes columns of requests, in its own order, with the same types', async () => {
    const deleted = await systemColumns(ch(), TABLES.requestsDeleted);
    expect(deleted.map((c) => c.name).join(', ')).toBe(REQUESTS_DELETED_COLUMNS);
    const types = new Map(
      (await systemColumns(ch(), TABLES.requests)).map((c) => [c.name, wireType(c.type)]),
    );
    expect(deleted.map((c) => ({ name: c.name, type: types.get(c.name) }))).toEqual(
      deleted.map((c) => ({ name: c.name, type: c.type })),
    );
  });

  it('rows encoded by the derived encoder and inserted by the processor read back column by column', async () => {
    const line = (r: StoredRecord) => Buffer.from(JSON.stringify(r));
    const rows = [
      toRow(record(1), 5, 2 ** 40 + 1),
      toRow(record(2, { timings: null, tags: [] }), 6, 2, line(record(2))),
      toRow(record(3), 7, 3, JSON.stringify(record(3))),
    ];
    expect(rows[1]!.duration).toBeNull();
    await new RequestsWriter(ch()).insert(rows, `layout:${Date.now()}`);
    for (const row of rows) expect(await readBack(ch(), row.sid)).toEqual(expected(row));
  });
});
