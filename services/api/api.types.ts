import type { FastifyTypeProvider } from 'fastify';
import type { JSONSchema } from 'json-schema-to-ts';
import type { Producer } from 'kafkajs';
import type pg from 'pg';
import type { ClickHouseClient } from '../shared/clickhouse.js';
import type { Config } from '../shared/config.js';
import type { CredentialStore, Principal } from '../shared/credentials.js';
import type { Logger } from '../shared/logger.js';
import type { FromSchemas, Reply } from '../../schemas/index.js';

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

/**
 * Fastify type provider: a route's params, querystring, body and replies are typed from its JSON
 * Schemas (json-schema-to-ts, with every registered `$id` resolvable by `$ref`), so a schema change
 * is a type error in the handlers that depend on it. Routes opt in with
 * `app.withTypeProvider<SchemaTypes>()`; their schemas must be `as const` (or `ref(...)`). What
 * @fastify/type-provider-json-schema-to-ts does, plus the registry's references and replies typed
 * with their declared properties only (`Reply`, as the serialiser writes them).
 */
export interface SchemaTypes extends FastifyTypeProvider {
  validator: this['schema'] extends JSONSchema ? FromSchemas<this['schema']> : unknown;
  serializer: this['schema'] extends JSONSchema ? Reply<this['schema']> : unknown;
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
