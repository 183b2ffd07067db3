/**
 * Disk per million stored records, by record size: for each size, a chDB directory of its own with
 * the migrations applied, `--records` records of the large sets (large-set.ts: 48 endpoints, 3
 * environments, ~4 % errors) spread over `--days` days, inserted with one `INSERT … SELECT`; the
 * materialized views fill the aggregates as for the processor's inserts. For the larger size each
 * record's text gets a JSON response body of `--body-items` order lines (ids, SKUs, prices and
 * names that vary per record, so it compresses like a real body, not like padding). Then every
 * table is merged (`OPTIMIZE … FINAL`: the state a day's partition reaches once its merges are
 * done) and `system.parts` gives each table's bytes on disk and its rows.
 *
 *   npx tsx test/bench/disk-per-record.ts [--records=200000] [--days=1] [--body-items=12]
 *
 * Prints one JSON line per size: bytes of stored text per record (`record` column, uncompressed),
 * and per table rows and bytes on disk per million records.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import {
  createClickHouse,
  migrateClickHouse,
  type ClickHouseClient,
} from '../../services/shared/clickhouse.js';
import { TABLES } from '../../services/shared/tables.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';
import { largeSetSql } from './large-set.js';

const arg = (name: string, fallback: number): number => {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a ? Number(a.slice(name.length + 3)) : fallback;
};
const RECORDS = arg('records', 200_000);
const DAYS = arg('days', 1);
const BODY_ITEMS = arg('body-items', 12);
const TABLES_MEASURED = [
  TABLES.requests,
  TABLES.requestsMinute,
  TABLES.requestsRollup,
  TABLES.excludedMinute,
];

async function scalar(ch: ClickHouseClient, query: string): Promise<number> {
  const [row] = await (await ch.query({ query, format: 'JSONEachRow' })).json<{ v: number | string }>();
  return Number(row?.v ?? 0);
}

/** A JSON response body of `items` order lines that differ per record, as a SQL expression. */
function bodySql(items: number): string {
  return `concat('[', arrayStringConcat(arrayMap(i -> format(
    '{{"id":{},"sku":"SKU-{}","qty":{},"price":{}.{},"name":"Item {} {}","ts":"{}"}}',
    toString(cityHash64(sid, i) % 100000000), hex(cityHash64(i, sid) % 1000000), toString(1 + cityHash64(sid, i, 1) % 9),
    toString(cityHash64(sid, i, 2) % 500), leftPad(toString(cityHash64(sid, i, 3) % 100), 2, '0'),
    arrayElement(['red', 'blue', 'large', 'small', 'organic', 'classic'], 1 + cityHash64(sid, i, 4) % 6),
    toString(cityHash64(sid, i, 5) % 1000), toString(created_at)), range(${items})), ','), ']')`;
}

async function measure(label: string, items: number): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-disk-'));
  const cfg = embeddedClickHouse(dir);
  const ch = createClickHouse(cfg);
  try {
    await migrateClickHouse(ch, cfg, pino({ level: 'silent' }));
    await ch.command({
      query: largeSetSql(['env_prod', 'env_staging', 'env_dev']),
      query_params: {
        a: 'acc_disk',
        b: 'bkt_disk',
        now: Date.now(),
        span: Math.round(DAYS * 86_400_000),
        from: 0,
        rows: RECORDS,
      },
      clickhouse_settings: { max_insert_threads: '2' },
    });
    if (items > 0) {
      // The body goes where the stored record keeps the response body (a JSON string value).
      await ch.command({
        query: `ALTER TABLE ${TABLES.requests} UPDATE record = replaceOne(record,
          concat('"body":"{\\\\"id\\\\":', toString(kafka_offset), ',\\\\"ok\\\\":true}"'),
          concat('"body":', toJSONString(${bodySql(items)})))
          WHERE 1 SETTINGS mutations_sync = 2`,
      });
    }
    for (const t of TABLES_MEASURED) await ch.command({ query: `OPTIMIZE TABLE ${t} FINAL` });
    const recordBytes = await scalar(ch, `SELECT avg(length(record)) AS v FROM ${TABLES.requests}`);
    const perMillion = (x: number) => Math.round((x * 1_000_000) / RECORDS);
    const tables: Record<string, { rows: number; bytesPerMillion: number }> = {};
    let total = 0;
    for (const t of TABLES_MEASURED) {
      const bytes = await scalar(
        ch,
        `SELECT sum(bytes_on_disk) AS v FROM system.parts WHERE database = currentDatabase() AND table = '${t}' AND active`,
      );
      const rows = await scalar(
        ch,
        `SELECT sum(rows) AS v FROM system.parts WHERE database = currentDatabase() AND table = '${t}' AND active`,
      );
      tables[t] = { rows, bytesPerMillion: perMillion(bytes) };
      total += bytes;
    }
    console.log(
      JSON.stringify({
        size: label,
        records: RECORDS,
        days: DAYS,
        recordTextBytes: Math.round(recordBytes),
        totalBytesPerMillion: perMillion(total),
        totalBytesPerRecord: Math.round(total / RECORDS),
        tables,
      }),
    );
  } finally {
    await ch.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await measure('compact', 0);
await measure('with response body', BODY_ITEMS);
