import type { Producer } from 'kafkajs';
import type pg from 'pg';
import type { ClickHouseClient } from '../shared/clickhouse.js';
import type { Config } from '../shared/config.js';
import type { CredentialStore, Principal } from '../shared/credentials.js';
import type { Logger } from '../shared/logger.js';

/** What the API needs from the process; handed to buildApp and decorated onto the instance. */
export interface ApiDeps {
  cfg: Config;
  log: Logger;
  pg: pg.Pool;
  ch: ClickHouseClient;
  credentials: CredentialStore;
  /** Kafka producer: re-runs of failed workflow executions are queued on workflow.actions (absent: 503) */
  producer?: Producer;
  /** readiness probe of every store the API depends on */
  ready: () => Promise<Record<string, boolean>>;
}

declare module 'fastify' {
  /** OpenAPI annotations read by the document generator. */
  interface FastifySchema {
    tags?: readonly string[];
    summary?: string;
    description?: string;
    hide?: boolean;
  }
  interface FastifyInstance {
    deps: ApiDeps;
  }
  interface FastifyRequest {
    principal: Principal;
  }
}
