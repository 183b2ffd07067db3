import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  ensureLauncher,
  startClickHouseServer,
  type ClickHouseServerHandle,
} from '../../infra/local/clickhouse-server.launcher.js';
import { createClickHouse } from '../../services/shared/clickhouse.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';
import { freePort, ROOT } from '../helpers/service-process.js';

/**
 * ClickHouse's own system logs stay bounded (docs/scaling.md "ClickHouse's own logs"):
 * - the local stack's server (CLICKHOUSE_MODE=server) and chDB run without any system log table:
 *   after queries and `SYSTEM FLUSH LOGS` no `system.*_log` table exists;
 * - infra/clickhouse/config.d/system-logs.xml, which docker-compose.yml mounts into the server's
 *   config.d, applied by the same engine over a main configuration that enables the logs a stock
 *   server writes: only query_log and part_log are made, each with a 3-day TTL; docker-compose.yml
 *   mounts it.
 */
const CACHE = path.join(ROOT, '.cache');
const dirs: string[] = [];
const servers: ClickHouseServerHandle[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const LOGS_SQL = `SELECT name, extract(create_table_query, 'TTL event_date[^)]*\\\\)') AS ttl FROM system.tables
  WHERE database = 'system' AND endsWith(name, '_log') ORDER BY name`;

/** The system logs a stock server configuration enables, each as its config.xml section. */
const STOCK_LOGS = [
  'query_log',
  'part_log',
  'trace_log',
  'metric_log',
  'asynchronous_metric_log',
  'processors_profile_log',
  'query_views_log',
  'query_metric_log',
  'error_log',
  'latency_log',
];

function stockConfig(): string {
  const section = (name: string) =>
    `<${name}><database>system</database><table>${name}</table>` +
    `<flush_interval_milliseconds>1000</flush_interval_milliseconds></${name}>`;
  return `<clickhouse>${STOCK_LOGS.map(section).join('')}</clickhouse>\n`;
}

/** Runs `query` in a one-shot engine on `dataDir` with the main configuration `configFile`. */
function runWithConfig(configFile: string, dataDir: string, query: string): string {
  const { bin } = ensureLauncher(CACHE);
  return execFileSync(bin, [`--config-file=${configFile}`, `--path=${dataDir}`, '--query', query], {
    cwd: dataDir,
    encoding: 'utf8',
    timeout: 120_000,
  });
}

const WORK = `SELECT count() FROM numbers(100000); CREATE TABLE t (x UInt32) ENGINE = MergeTree ORDER BY x;
  INSERT INTO t SELECT number FROM numbers(1000); SELECT sleep(2); SYSTEM FLUSH LOGS;`;

function tempDir(name: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `tapline-${name}-`));
  dirs.push(dir);
  return dir;
}

describe("ClickHouse's own system logs are bounded", () => {
  it('the local server (CLICKHOUSE_MODE=server) keeps no system log table', async () => {
    const dataDir = tempDir('chlogs-server');
    const server = await startClickHouseServer({
      cacheDir: CACHE,
      dataDir,
      httpPort: await freePort(),
      tcpPort: await freePort(),
      log: pino({ level: 'silent' }),
    });
    servers.push(server);
    const run = async (sql: string) => {
      const res = await fetch(`${server.url}/?query=${encodeURIComponent(sql)}`, { method: 'POST' });
      const text = await res.text();
      if (!res.ok) throw new Error(text);
      return text.trim();
    };
    for (const statement of WORK.split(';')
      .map((s) => s.trim())
      .filter(Boolean))
      await run(statement);
    expect(await run(LOGS_SQL)).toBe('');
  });

  it('chDB keeps no system log table', async () => {
    const ch = createClickHouse(embeddedClickHouse(tempDir('chlogs-chdb')));
    try {
      for (const statement of WORK.split(';')
        .map((s) => s.trim())
        .filter(Boolean))
        await ch.command({ query: statement });
      const logs = await (await ch.query({ query: LOGS_SQL, format: 'JSONEachRow' })).json();
      expect(logs).toEqual([]);
    } finally {
      await ch.close();
    }
  });

  it('system-logs.xml over a stock configuration leaves query_log and part_log, 3 days each', () => {
    const stock = tempDir('chlogs-stock');
    fs.writeFileSync(path.join(stock, 'config.xml'), stockConfig());
    const stockRun = runWithConfig(
      path.join(stock, 'config.xml'),
      tempDir('chlogs-stock-data'),
      `${WORK} ${LOGS_SQL}`,
    );
    // Without the file, this engine makes the stock logs, with no TTL.
    const stockLogs = stockRun
      .split('\n')
      .filter((l) => l.includes('_log'))
      .map((l) => l.split('\t'));
    expect(stockLogs.map(([name]) => name)).toEqual(
      expect.arrayContaining(['asynchronous_metric_log', 'metric_log', 'query_log', 'trace_log']),
    );
    expect(stockLogs.every(([, ttl]) => !ttl)).toBe(true);

    const bounded = tempDir('chlogs-bounded');
    fs.writeFileSync(path.join(bounded, 'config.xml'), stockConfig());
    fs.mkdirSync(path.join(bounded, 'config.d'));
    fs.copyFileSync(
      path.join(ROOT, 'infra/clickhouse/config.d/system-logs.xml'),
      path.join(bounded, 'config.d/system-logs.xml'),
    );
    const out = runWithConfig(
      path.join(bounded, 'config.xml'),
      tempDir('chlogs-bounded-data'),
      `${WORK} ${LOGS_SQL}`,
    );
    const logs = out
      .trim()
      .split('\n')
      .filter((l) => l.includes('_log'));
    expect(logs).toEqual([
      'part_log\tTTL event_date + toIntervalDay(3)',
      'query_log\tTTL event_date + toIntervalDay(3)',
    ]);
  });

  it("docker-compose.yml mounts system-logs.xml into the ClickHouse server's config.d", () => {
    const compose = parse(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8')) as {
      services: Record<string, { volumes?: string[] }>;
    };
    expect(compose.services.clickhouse?.volumes).toContain(
      './infra/clickhouse/config.d/system-logs.xml:/etc/clickhouse-server/config.d/system-logs.xml:ro',
    );
  });
});
