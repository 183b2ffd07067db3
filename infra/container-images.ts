/**
 * The container images of the scaled deployment: docker-compose.yml runs these, the test setup
 * starts them with testcontainers where a Docker engine answers (test/helpers/container-stack.ts),
 * and test/unit/deployment-compose.test.ts checks the compose file names the same ones. The
 * ClickHouse version is the engine version the tests run locally (the chdb package's).
 */
export const IMAGES = {
  kafka: 'apache/kafka:4.1.1',
  postgres: 'postgres:18',
  clickhouse: 'clickhouse/clickhouse-server:26.7',
} as const;
