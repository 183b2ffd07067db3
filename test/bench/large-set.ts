/**
 * Loads a large stored set (1 or 10 million records) DIRECTLY into the service's ClickHouse, with
 * one `INSERT INTO requests SELECT … FROM numbers(…)`: no ingest, no Kafka (the pipeline would take
 * minutes per million on this machine). The materialized views fill the per-minute aggregates as
 * they do for the processor's inserts. Forked by bench.ts. Embedded mode (`path`): while the
 * service is stopped, since a chDB directory is opened by one process at a time. Server mode
 * (`url`): the same statement sent over HTTP to the service's ClickHouse server while the service
 * runs (the server generates the rows itself; nothing but the statement crosses HTTP).
 *
 * The columns follow the same shapes as the HTTP benchmark's records (records.ts): 50 endpoint
 * templates with numeric, UUID and prefixed ids in the paths, 3 hosts, 3 environments, ~4% errors,
 * log-normal durations (median ~45 ms), created over the last `days` days in time order. `record`
 * is a compact but complete stored record (~0.6 KB) so list and search answers have the usual
 * shape.
 */
import { performance } from 'node:perf_hooks';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createClient } from '@clickhouse/client';
import { pino } from 'pino';
import {
  createClickHouse,
  migrateClickHouse,
  type ClickHouseClient,
} from '../../services/shared/clickhouse.js';
import { TABLES } from '../../services/shared/tables.js';
import { ENDPOINTS } from './records.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';

export interface LargeSetConfig {
  /** the chDB directory (embedded mode) */
  path: string;
  /** the ClickHouse server's HTTP URL (server mode); when set, `path` is not used */
  url?: string;
  accountSid: string;
  bucketSid: string;
  /** first number of the generated range (a second load continues the first) */
  from: number;
  rows: number;
  days: number;
  environments: string[];
}

export interface LargeSetResult {
  rows: number;
  seconds: number;
  rate: number;
  totalRows: number;
  /** active parts of the database right after the load, and once its merges settled */
  activeParts: number;
  settledParts: number;
  /** how long the background merges that followed the load ran (bounded by SETTLE_LIMIT_MS) */
  settleSeconds: number;
}

/** The longest wait for the merges that follow a load. */
const SETTLE_LIMIT_MS = 300_000;

const q = (s: string) => `'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
const arr = (xs: readonly string[]) => `[${xs.map(q).join(', ')}]`;
/** ISO 8601 with ms and Z, as the API writes timestamps. */
const iso = (col: string) => `concat(replaceOne(toString(${col}), ' ', 'T'), 'Z')`;

/** The stored record as JSON, concatenated from the row's columns (every value is JSON-safe text). */
function recordJson(): string {
  // Literal text is written as is; `${…}` marks a SQL expression.
  const template =
    '{"sid":"${sid}","accountSid":"${account_sid}","bucketSid":"${bucket_sid}",' +
    '"environmentSid":"${environment_sid}","contextSid":null,"direction":"in",' +
    '"createdAt":"${ISO(created_at)}","receivedAt":"${ISO(received_at)}","firewall":{"blocked":false},' +
    '"request":{"host":"${host}","method":"${method}","path":"${path}","port":443,"url":"https://${host}${path}",' +
    '"queryString":{},"headers":{"accept":"application/json","user-agent":"okhttp/4.12.0",' +
    '"x-request-id":"${toString(generateUUIDv4(n + 1))}"},"body":null,"contentType":null,' +
    '"size":${toString(request_size)}},"response":{"statusCode":${toString(status_code)},' +
    '"headers":{"content-type":"application/json"},"size":${toString(response_size)},' +
    '"body":"{\\"id\\":${toString(n)},\\"ok\\":true}","contentType":"application/json"},' +
    '"timings":{"duration":${toString(duration)}},"tags":[{"key":"release","value":"${tags[\'release\']}"}],' +
    '"endpoint":"${endpoint}"}';
  const parts = template.split(/\$\{(.*?)\}(?=[",}\]\\$])/);
  // split with one capture group: even indexes are literal text, odd indexes expressions.
  const sql = parts
    .map((p, i) => (i % 2 === 0 ? (p ? q(p) : '') : p.replace(/^ISO\((\w+)\)$/, (_, c: string) => iso(c))))
    .filter(Boolean);
  return `concat(${sql.join(', ')})`;
}

/** The INSERT … SELECT; only constants of this file and bound parameters reach the SQL. */
export function largeSetSql(environments: readonly string[]): string {
  const methods = arr(ENDPOINTS.map((e) => e.method));
  const templates = arr(ENDPOINTS.map((e) => e.template));
  const endpoints = arr(ENDPOINTS.map((e) => e.endpoint));
  return `
INSERT INTO ${TABLES.requests}
  (account_sid, bucket_sid, sid, environment_sid, context_sid, direction, created_at, received_at, stored_at,
   method, host, path, endpoint, status_code, duration, request_size, response_size, blocked, tags, record,
   kafka_partition, kafka_offset)
SELECT account_sid, bucket_sid, sid, environment_sid, '', 'in', created_at, received_at, stored_at,
  method, host, path, endpoint, status_code, duration, request_size, response_size, 0, tags,
  ${recordJson()},
  0, n
FROM
(
  SELECT
    number AS n,
    {a:String} AS account_sid,
    {b:String} AS bucket_sid,
    concat('req_', substring(hex(cityHash64(number, {b:String})), 1, 16), leftPad(toString(number), 11, '0')) AS sid,
    arrayElement(${arr(environments)}, 1 + cityHash64(number, 2) % ${environments.length}) AS environment_sid,
    -- In time order across the range, as the processor's inserts arrive (each inserted block then
    -- holds a slice of the range, so a rollup block's rows sit in few parts), jittered by < 30 s.
    fromUnixTimestamp64Milli(toInt64({now:Int64} - {span:UInt64}
      + intDiv((number - {from:UInt64}) * {span:UInt64}, {rows:UInt64}) - cityHash64(number, 3) % 30000), 'UTC') AS created_at,
    created_at + toIntervalMillisecond(5 + cityHash64(number, 4) % 300) AS received_at,
    received_at + toIntervalMillisecond(50 + cityHash64(number, 5) % 400) AS stored_at,
    1 + cityHash64(number, 6) % ${ENDPOINTS.length} AS e,
    arrayElement(${methods}, e) AS method,
    arrayElement(['api.shop.example.com', 'api.eu.shop.example.com', 'partners.example.com'], 1 + number % 3) AS host,
    replaceAll(replaceAll(replaceAll(arrayElement(${templates}, e),
      '{num}', toString(1 + cityHash64(number, 7) % 5000000)),
      '{uuid}', toString(generateUUIDv4(number))),
      '{code}', concat('inv_', substring(hex(cityHash64(number, 8)), 1, 9), toString(number % 10))) AS path,
    arrayElement(${endpoints}, e) AS endpoint,
    cityHash64(number, 9) % 10000 AS u,
    toUInt16(multiIf(u < 7000, 200, u < 8200, 201, u < 8700, 204, u < 9600, 304, u < 9720, 400, u < 9770, 401,
      u < 9900, 404, u < 9920, 409, u < 9950, 429, u < 9990, 500, u < 9993, 502, 503)) AS status_code,
    round(exp(log(45) + randNormal(0., 1.)), 1) AS duration,
    if(method IN ('POST', 'PUT', 'PATCH'), 100 + cityHash64(number, 10) % 3000, 0) AS request_size,
    if(status_code IN (204, 304), 0, 200 + cityHash64(number, 11) % 6000) AS response_size,
    map('release', concat('2026.11.', toString(1 + number % 9))) AS tags
  FROM numbers({from:UInt64}, {rows:UInt64})
)`;
}

/**
 * Stores `rows` records of the set's shape (numbers `from`… of the set) for one bucket, spread
 * over the hour before now in one environment, with one statement: the tests' stored records.
 */
export async function storeSetRecords(
  ch: ClickHouseClient,
  bucket: { accountSid: string; bucketSid: string },
  rows: number,
  from = 0,
): Promise<void> {
  await ch.command({
    query: largeSetSql(['prod01']),
    query_params: {
      a: bucket.accountSid,
      b: bucket.bucketSid,
      now: Date.now(),
      span: 3_600_000,
      from,
      rows,
    },
  });
}

/**
 * The HTTP URL of a ClickHouse server process started by the local stack, from its command line
 * in /proc (infra/local/clickhouse-server.launcher.ts passes `--http_port=`).
 */
export function clickhouseServerUrl(serverPid: number): string {
  const argv = fs.readFileSync(`/proc/${serverPid}/cmdline`, 'utf8').split('\0');
  const port = argv.find((a) => a.startsWith('--http_port='))?.slice('--http_port='.length);
  if (!port) throw new Error(`process ${serverPid} has no --http_port argument`);
  return `http://127.0.0.1:${port}`;
}

/**
 * The client of the load: chDB in `path` (with the migrations applied, as a first start would), or
 * the server at `url`, whose service has applied them already. The server's client waits up to an
 * hour for the one INSERT (10M rows take minutes; the service's client gives up after 60 s).
 */
async function open(cfg: LargeSetConfig): Promise<ClickHouseClient> {
  if (cfg.url) {
    return createClient({
      url: cfg.url,
      database: 'tapline',
      request_timeout: 3_600_000,
      // Progress headers every 10 s keep the long INSERT's connection from looking idle.
      clickhouse_settings: {
        output_format_json_quote_64bit_integers: 0,
        send_progress_in_http_headers: 1,
        http_headers_progress_interval_ms: '10000',
      },
    });
  }
  const chCfg = embeddedClickHouse(cfg.path);
  const ch = createClickHouse(chCfg);
  await migrateClickHouse(ch, chCfg, pino({ level: 'warn' }));
  return ch;
}

async function scalar(ch: ClickHouseClient, query: string): Promise<number> {
  const [row] = await (await ch.query({ query, format: 'JSONEachRow' })).json<{ n: number | string }>();
  return Number(row?.n ?? 0);
}

async function run(cfg: LargeSetConfig): Promise<LargeSetResult> {
  const ch = await open(cfg);
  try {
    const t0 = performance.now();
    await ch.command({
      query: largeSetSql(cfg.environments),
      query_params: {
        a: cfg.accountSid,
        b: cfg.bucketSid,
        now: Date.now(),
        span: cfg.days * 86_400_000,
        from: cfg.from,
        rows: cfg.rows,
      },
      clickhouse_settings: { max_insert_threads: '2' },
    });
    const seconds = (performance.now() - t0) / 1000;
    const [count] = await (
      await ch.query({
        query: `SELECT count() AS n FROM ${TABLES.requests} WHERE account_sid = {a:String} AND bucket_sid = {b:String}`,
        query_params: { a: cfg.accountSid, b: cfg.bucketSid },
        format: 'JSONEachRow',
      })
    ).json<{ n: number | string }>();
    const activeParts = await scalar(
      ch,
      `SELECT count() AS n FROM system.parts WHERE database = currentDatabase() AND active`,
    );
    // The queries are timed on the set as a running service holds it, not while the background
    // merges that a bulk load of millions of rows starts are still rewriting its parts: the load
    // waits until no merge has run for two polls in a row (at most SETTLE_LIMIT_MS). The service's
    // tables are in currentDatabase(): `tapline` on a server, `default` in chDB, which ignores
    // the client's database for unqualified tables (services/shared/clickhouse.ts).
    const t1 = performance.now();
    let idle = 0;
    while (idle < 2 && performance.now() - t1 < SETTLE_LIMIT_MS) {
      await new Promise((r) => setTimeout(r, 1000));
      const merging = await scalar(
        ch,
        `SELECT count() AS n FROM system.merges WHERE database = currentDatabase()`,
      );
      idle = merging === 0 ? idle + 1 : 0;
    }
    return {
      rows: cfg.rows,
      seconds,
      rate: cfg.rows / seconds,
      totalRows: Number(count?.n ?? 0),
      activeParts,
      settledParts: await scalar(
        ch,
        `SELECT count() AS n FROM system.parts WHERE database = currentDatabase() AND active`,
      ),
      settleSeconds: (performance.now() - t1) / 1000,
    };
  } finally {
    await ch.close();
  }
}

// Only when forked as its own script (bench.ts imports clickhouseServerUrl from here, a test its SQL).
if (process.send && process.argv[1] === fileURLToPath(import.meta.url))
  process.on('message', (cfg: LargeSetConfig) => {
    void run(cfg).then(
      (result) => process.send!({ type: 'done', result }, () => process.exit(0)),
      (err: Error) =>
        process.send!({ type: 'error', message: err.stack ?? err.message }, () => process.exit(1)),
    );
  });
