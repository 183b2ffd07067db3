import { GenericContainer, Wait, type StartedTestContainer } from 'testcontainers';
import { IMAGES } from '../../infra/container-images.js';
import type { LocalStack } from '../../infra/local/stack.js';
import { freePort } from './service-process.js';

/**
 * Kafka, Postgres and ClickHouse as containers of the compose file's images, on free host ports.
 * Returns the same shape as the local launcher, so everything after the start is shared.
 */
export async function startContainerStack(): Promise<LocalStack> {
  const kafkaPort = await freePort();
  const started: StartedTestContainer[] = [];
  const stop = async () => {
    await Promise.allSettled(started.map((c) => c.stop()));
  };
  try {
    const [kafka, postgres, clickhouse] = await Promise.all([
      new GenericContainer(IMAGES.kafka)
        .withEnvironment({
          KAFKA_NODE_ID: '1',
          KAFKA_PROCESS_ROLES: 'broker,controller',
          KAFKA_LISTENERS: 'PLAINTEXT://:9092,CONTROLLER://:9093',
          // The host's port is fixed up front: the broker must advertise the address clients use.
          KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://127.0.0.1:${kafkaPort}`,
          KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
          KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
          KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
          KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
          KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
          KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
          KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
          KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
          KAFKA_MESSAGE_MAX_BYTES: '16777216',
        })
        .withExposedPorts({ container: 9092, host: kafkaPort })
        .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
        .start()
        .then((c) => (started.push(c), c)),
      new GenericContainer(IMAGES.postgres)
        .withEnvironment({ POSTGRES_USER: 'tapline', POSTGRES_PASSWORD: 'tapline', POSTGRES_DB: 'tapline' })
        .withExposedPorts(5432)
        .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
        .start()
        .then((c) => (started.push(c), c)),
      new GenericContainer(IMAGES.clickhouse)
        // The default user without a password, reachable from the host (as CLICKHOUSE_URL without
        // credentials in the local stack); the compose file sets a password instead.
        .withEnvironment({ CLICKHOUSE_SKIP_USER_SETUP: '1' })
        .withExposedPorts(8123)
        .withWaitStrategy(Wait.forHttp('/ping', 8123))
        .start()
        .then((c) => (started.push(c), c)),
    ]);
    return {
      kafkaBrokers: [`127.0.0.1:${kafka.getMappedPort(9092)}`],
      databaseUrl: `postgres://tapline:tapline@${postgres.getHost()}:${postgres.getMappedPort(5432)}/tapline`,
      clickhouseUrl: `http://${clickhouse.getHost()}:${clickhouse.getMappedPort(8123)}`,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
