/**
 * A/B of the per-record hot paths changed after profiling, in one process, rounds interleaved so
 * both variants see the same machine load; figures are CPU µs per record (process.cpuUsage counts
 * chDB's threads too), which a shared machine distorts far less than wall time.
 *
 *   npx tsx test/bench/hot-paths.ts [records=20000] [rounds=3]
 *
 * - ClickHouse insert of a processor block: the client's JSONEachRow encoding of row objects
 *   (before); RequestsWriter's own lines (record as a raw object) through the client's `exec` (not
 *   used: on chDB the client turns the body into one SQL string, which costs more than it saves); RequestsWriter.insert on chDB (after: since
 *   2026-11-22 RowBinary through `file()`; test/bench/ch-decompose.ts compares it with chDB's raw
 *   insert of the JSONEachRow lines, the previous "after").
 * - Ingest body parse of a 100-record batch: Fastify's default parser (secure-json-parse with
 *   prototype-poisoning scans, before) vs the ingest listener's parseJsonBody (after).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import sjson from 'secure-json-parse';
import { parseJsonBody } from '../../services/ingest/ingest.app.js';
import type { StoredRecord } from '../../services/processor/pipeline.js';
import { RequestsWriter } from '../../services/processor/requests.writer.js';
import { jsonEachRow } from './legacy-insert.js';
import { toRow } from '../../services/processor/row.mapper.js';
import { TABLES } from '../../services/shared/tables.js';
import { ROOT } from './bench-stack.js';
import { processorRecords, scratchClickHouse } from './ch-scratch.js';

const N = Number(process.argv[2] ?? 20_000);
const ROUNDS = Number(process.argv[3] ?? 3);

function cpuUs<T>(fn: () => T): { us: number; value: T } {
  const c0 = process.cpuUsage();
  const value = fn();
  const c = process.cpuUsage(c0);
  return { us: c.user + c.system, value };
}
async function cpuUsAsync(fn: () => Promise<unknown>): Promise<number> {
  const c0 = process.cpuUsage();
  await fn();
  const c = process.cpuUsage(c0);
  return c.user + c.system;
}

async function main(): Promise<void> {
  const name = `bench-hot-paths-${process.pid}`;
  const ch = await scratchClickHouse(name);
  try {
    const texts = processorRecords(N, { account: 'acc_hotpaths' }).map((r) => JSON.stringify(r));
    const writer = new RequestsWriter(ch);
    const settings = (token: string) => ({
      insert_deduplicate: 1 as const,
      insert_deduplication_token: token,
      deduplicate_blocks_in_dependent_materialized_views: 1 as const,
      date_time_input_format: 'best_effort' as const,
      async_insert: 0 as const,
    });
    const totals = { before: 0, exec: 0, after: 0, parseBefore: 0, parseAfter: 0 };
    let k = 0;
    // Ingest bodies of 100 records, as the load generators send them.
    const bodies: string[] = [];
    for (let i = 0; i + 100 <= N; i += 100) bodies.push(`{"records":[${texts.slice(i, i + 100).join(',')}]}`);
    for (let round = 0; round < ROUNDS; round++) {
      const fresh = () => texts.map((t, i) => toRow(JSON.parse(t) as StoredRecord, 0, i));
      // Rows are rebuilt for each variant (untimed): the same objects would be warmer for the second.
      let rows = fresh();
      totals.before += await cpuUsAsync(() =>
        ch.insert({
          table: TABLES.requests,
          values: rows.map(({ created_at_ms: _c, received_at_ms: _r, ...row }) => row),
          format: 'JSONEachRow',
          clickhouse_settings: settings(`b${k++}`),
        }),
      );
      rows = fresh();
      totals.after += await cpuUsAsync(() => writer.insert(rows, `a${k++}`));
      rows = fresh();
      totals.exec += await cpuUsAsync(async () => {
        const res = await ch.exec({
          query: `INSERT INTO ${TABLES.requests} FORMAT JSONEachRow`,
          values: Readable.from([Buffer.from(jsonEachRow(rows))], { objectMode: false }),
          clickhouse_settings: { ...settings(`e${k++}`), input_format_json_read_objects_as_strings: 1 },
        });
        for await (const _ of res.stream) void _;
      });
      totals.parseBefore += cpuUs(() =>
        bodies.map((b) => sjson.parse(b, { protoAction: 'error', constructorAction: 'error' })),
      ).us;
      totals.parseAfter += cpuUs(() => bodies.map((b) => parseJsonBody(b))).us;
    }
    const lines = { procBefore: 0, procAfter: 0 };
    const lineTexts = texts.map((t) => Buffer.from(t));
    for (let round = 0; round < ROUNDS; round++) {
      // Processor: parse a record's line and map it to a row, serialising the record (before) or
      // keeping its line (after).
      lines.procBefore += cpuUs(() =>
        lineTexts.map((t, i) => toRow(JSON.parse(t.toString('utf8')) as StoredRecord, 0, i)),
      ).us;
      lines.procAfter += cpuUs(() =>
        lineTexts.map((t, i) => toRow(JSON.parse(t.toString('utf8')) as StoredRecord, 0, i, t)),
      ).us;
    }
    const per = (us: number, n: number) => (us / (ROUNDS * n)).toFixed(1);
    const parsed = bodies.length * 100;
    console.log(
      `  processor parse + toRow, record serialised (before):                  ${per(lines.procBefore, N)}`,
    );
    console.log(
      `  processor parse + toRow, the line kept (after):                       ${per(lines.procAfter, N)}`,
    );
    console.log(`records ${N}, rounds ${ROUNDS}, CPU µs per record (Node + chDB threads):`);
    console.log(`  ClickHouse insert, client JSONEachRow of row objects (before): ${per(totals.before, N)}`);
    console.log(`  ClickHouse insert, writer's lines through client exec (not used): ${per(totals.exec, N)}`);
    console.log(`  ClickHouse insert, RequestsWriter.insert on chDB (after): ${per(totals.after, N)}`);
    console.log(
      `  ingest body parse, secure-json-parse (Fastify default, before): ${per(totals.parseBefore, parsed)}`,
    );
    console.log(
      `  ingest body parse, parseJsonBody (after):                      ${per(totals.parseAfter, parsed)}`,
    );
  } finally {
    await ch.close();
    fs.rmSync(path.join(ROOT, '.cache', name), { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
