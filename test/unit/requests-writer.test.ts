import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredRecord } from '../../services/processor/pipeline.js';
import { epochMs } from '../../services/processor/row-binary.js';
import { RequestsWriter, Spool, spoolBase } from '../../services/processor/requests.writer.js';
import { toRow, type RequestRow } from '../../services/processor/row.mapper.js';
import {
  createClickHouse,
  migrateClickHouse,
  type ClickHouseClient,
} from '../../services/shared/clickhouse.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';

// The processor's insert against a real chDB (its own directory): RowBinary written by the
// writer, read back column by column.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-writer-'));
const chCfg = embeddedClickHouse(dir);
let ch: ClickHouseClient;
let writer: RequestsWriter;

beforeAll(async () => {
  ch = createClickHouse(chCfg);
  await migrateClickHouse(ch, chCfg, pino({ level: 'silent' }));
  writer = new RequestsWriter(ch);
}, 120_000);

afterAll(async () => {
  await ch?.close();
});

function record(i: number, over: Partial<StoredRecord> = {}): StoredRecord {
  return {
    sid: `req_${String(i).padStart(27, '0')}`,
    accountSid: 'acc_writer',
    bucketSid: 'bkt_writer',
    environmentSid: 'prod01',
    contextSid: null,
    direction: 'in',
    createdAt: '2026-11-22T10:00:00.123Z',
    receivedAt: '2026-11-22T10:00:00.456Z',
    endpoint: '/v1/users/{id}',
    request: { method: 'get', host: 'api.example.com', path: `/v1/users/${i}`, body: null },
    response: { statusCode: 200, body: '{"ok":true}' },
    timings: { duration: 12.5 },
    tags: [{ key: 'release', value: '2026.11' }],
    firewall: { blocked: false },
    ...over,
  } as StoredRecord;
}

async function select(sid: string): Promise<Record<string, unknown>> {
  const rs = await ch.query({
    query: `SELECT account_sid, bucket_sid, sid, environment_sid, context_sid, direction,
                   toUnixTimestamp64Milli(created_at) AS created_ms,
                   toUnixTimestamp64Milli(received_at) AS received_ms, method, host, path, endpoint,
                   status_code, duration, request_size, response_size, blocked, tags, record,
                   kafka_partition, toString(kafka_offset) AS kafka_offset
            FROM requests WHERE sid = {sid:String}`,
    query_params: { sid },
    format: 'JSONEachRow',
  });
  const rows = await rs.json<Record<string, unknown>>();
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

function expectStored(stored: Record<string, unknown>, row: RequestRow): void {
  expect(stored).toEqual({
    account_sid: row.account_sid,
    bucket_sid: row.bucket_sid,
    sid: row.sid,
    environment_sid: row.environment_sid,
    context_sid: row.context_sid,
    direction: row.direction,
    created_ms: row.created_at_ms,
    received_ms: row.received_at_ms,
    method: row.method,
    host: row.host,
    path: row.path,
    endpoint: row.endpoint,
    status_code: row.status_code,
    duration: row.duration,
    request_size: row.request_size,
    response_size: row.response_size,
    blocked: row.blocked,
    tags: row.tags,
    record: String(row.record),
    kafka_partition: row.kafka_partition,
    kafka_offset: String(row.kafka_offset),
  });
}

describe('RequestsWriter on chDB (RowBinary through file())', () => {
  it('stores every column as mapped, including multi-byte text, nulls, old dates and large offsets', async () => {
    const long = 'é'.repeat(300); // 600 bytes: a multi-byte LEB128 length
    const fortyTwo = '€'.repeat(42); // 126 bytes: the longest string written without measuring
    const fortyThree = '€'.repeat(43); // 129 bytes: measured, two-byte length
    const records = [
      record(1),
      record(2, {
        environmentSid: fortyTwo,
        contextSid: fortyThree,
        request: { method: 'post', host: '例え.jp', path: `/v1/${long}`, body: '{"a":"\u2028 😀"}' },
        response: { statusCode: 503, body: 'x'.repeat(10_000) },
        timings: null,
        tags: [
          { key: 'sdk', value: 'node/1.2.3' },
          { key: 'k\ttab', value: "it's \\ quoted" },
          { key: '', value: '' },
        ],
        firewall: { blocked: true },
      }),
      // a lone surrogate (valid JSON, accepted by ingest) and a date before 1970
      record(3, {
        request: { method: 'GET', host: 'h', path: '/\ud800' },
        createdAt: '1965-03-01T00:00:00.001Z',
      }),
      record(4, { timings: { duration: 0 }, createdAt: '2026-11-22T12:00:00+02:00' }),
    ];
    const rows = records.map((r, i) => toRow(r, 7, 2 ** 40 + i));
    // A version 2 Kafka line stored as it came: its bytes, not a serialisation of the record.
    const line = '{"sid":"req_000000000000000000000000005","note":"ünïcode ✓ \\u00e9","b":[1,2]}';
    const fromLine = toRow(
      record(5),
      7,
      5,
      Buffer.from(`x${line}\n`).subarray(1, 1 + Buffer.byteLength(line)),
    );
    await writer.insert([...rows, fromLine], 'unit:columns');
    expect((await select('req_000000000000000000000000005')).record).toBe(line);
    for (const row of rows) {
      const stored = await select(row.sid);
      // A lone surrogate is stored as U+FFFD in the column, and escaped (unchanged) in the record text.
      expectStored(stored, row.path.includes('\ud800') ? { ...row, path: '/\ufffd' } : row);
      expect(JSON.parse(stored.record as string)).toEqual(JSON.parse(String(row.record)));
    }
    expect(rows[2]!.created_at_ms).toBe(Date.UTC(1965, 2, 1, 0, 0, 0, 1));
    expect(rows[3]!.created_at_ms).toBe(Date.UTC(2026, 10, 22, 10, 0, 0));
    expect(rows[1]!.duration).toBeNull();
    expect(rows[1]!.blocked).toBe(1);
  });

  it('a block re-sent with the same token is stored once, in the table and in the aggregates', async () => {
    const rows = Array.from({ length: 500 }, (_, i) =>
      toRow(record(1000 + i, { bucketSid: 'bkt_dedup' }), 0, 1000 + i),
    );
    await writer.insert(rows, 'unit:dedup');
    await writer.insert(rows, 'unit:dedup');
    const count = async (query: string) => {
      const rs = await ch.query({ query, format: 'JSONEachRow' });
      return Number((await rs.json<{ n: string | number }>())[0]!.n);
    };
    expect(await count("SELECT count() AS n FROM requests WHERE bucket_sid = 'bkt_dedup'")).toBe(500);
    expect(await count("SELECT sum(requests) AS n FROM requests_minute WHERE bucket_sid = 'bkt_dedup'")).toBe(
      500,
    );
    // Each request once in its environment's rollup rows and once in the all-environments ones.
    for (const env of ["!= '*'", "= '*'"])
      expect(
        await count(
          `SELECT sum(requests) AS n FROM requests_rollup WHERE bucket_sid = 'bkt_dedup' AND dim = 'all' AND level = 10
           AND environment_sid ${env}`,
        ),
      ).toBe(500);
    // A different token is a different block.
    await writer.insert(rows.slice(0, 10), 'unit:dedup:other');
    expect(await count("SELECT count() AS n FROM requests WHERE bucket_sid = 'bkt_dedup'")).toBe(510);
  });

  it('leaves no spool files behind, even for an insert in flight', () => {
    const base = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
    // On Linux each block's file is unlinked as soon as it is open (chDB reads it through
    // /proc/self/fd), so a process killed mid-insert leaves nothing in RAM-backed /dev/shm; after
    // the inserts above, this process has no entry there at all.
    const mine = fs
      .readdirSync(base)
      .filter((d) => d.startsWith(`tapline-insert-${process.pid}-`) || d.startsWith(`${process.pid}-`));
    expect(mine).toEqual([]);
    const dirs = fs
      .readdirSync(base)
      .filter((d) => d.startsWith('tapline-insert-'))
      .map((d) => path.join(base, d))
      .filter((d) => fs.statSync(d).isDirectory() && fs.statSync(d).uid === process.getuid?.())
      .filter((d) => fs.readdirSync(d).some((f) => f.startsWith(`${process.pid}-`)));
    expect(dirs).toEqual([]);
  });

  it('spools a block to a file that has no name while it is written and read', () => {
    const base = spoolBase();
    const before = fs.readdirSync(base).filter((d) => d.startsWith(`tapline-insert-${process.pid}-`));
    const file = new Spool(base).open();
    try {
      fs.writeSync(file.fd, 'spooled');
      expect(file.path).toBe(`/proc/self/fd/${file.fd}`);
      // Readable through the descriptor's path from its start, as chDB's file() reads it…
      expect(fs.readFileSync(file.path, 'utf8')).toBe('spooled');
      // …with nothing named in the spool directory that a kill -9 could leave behind.
      expect(fs.readdirSync(base).filter((d) => d.startsWith(`tapline-insert-${process.pid}-`))).toEqual(
        before,
      );
    } finally {
      file.release();
    }
    expect(() => fs.fstatSync(file.fd)).toThrow();
  });
});

describe('epochMs (RFC 3339 date-times as DateTime64(3))', () => {
  it('reads the forms the ingest schema accepts', () => {
    expect(epochMs('2026-11-22T03:18:06.661Z')).toBe(Date.UTC(2026, 10, 22, 3, 18, 6, 661));
    expect(epochMs('2026-11-22T03:18:06.661999Z')).toBe(Date.UTC(2026, 10, 22, 3, 18, 6, 661));
    expect(epochMs('2026-11-22t03:18:06z')).toBe(Date.UTC(2026, 10, 22, 3, 18, 6));
    expect(epochMs('2026-11-22T05:18:06+02:00')).toBe(Date.UTC(2026, 10, 22, 3, 18, 6));
    expect(epochMs('2026-11-22T01:18:06-0200')).toBe(Date.UTC(2026, 10, 22, 3, 18, 6));
    // a leap second is the first second of the next minute
    expect(epochMs('2026-12-31T23:59:60Z')).toBe(Date.UTC(2027, 0, 1, 0, 0, 0));
    expect(epochMs('2026-12-31T23:59:60.5+01:00')).toBe(Date.UTC(2026, 11, 31, 23, 0, 0, 500));
  });

  it('is NaN for text that is not a date-time', () => {
    expect(epochMs('yesterday')).toBeNaN();
    expect(epochMs('')).toBeNaN();
  });
});
