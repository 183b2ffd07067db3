import { pino } from 'pino';
import { startClickHouseServer } from '../../infra/local/clickhouse-server.launcher.js';

/**
 * A launcher process for test/integration/clickhouse-server-restart.test.ts: starts the local
 * ClickHouse server on CH_DATA_DIR and the given ports, prints `{"url", "pid"}` as one line and
 * then waits, so the test can SIGKILL it as `kill -9` would end a Tapline process.
 */
const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
};

const server = await startClickHouseServer({
  cacheDir: env('CH_CACHE_DIR'),
  dataDir: env('CH_DATA_DIR'),
  httpPort: Number(env('CH_HTTP_PORT')),
  tcpPort: Number(env('CH_TCP_PORT')),
  log: pino({ level: 'warn' }),
});
process.stdout.write(`${JSON.stringify({ url: server.url, pid: server.pid })}\n`);
setInterval(() => undefined, 60_000);
