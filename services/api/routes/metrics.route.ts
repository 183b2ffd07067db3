import type { FastifyInstance } from 'fastify';
import { ref, type SchemaId } from '../../../schemas/index.js';
import type { SchemaTypes } from '../api.types.js';
import { accountParams } from '../../../schemas/common.schema.js';
import {
  errorsQuery,
  metricsScopeQuery,
  performanceQuery,
  responseTimePeriodsQuery,
  throughputPeriodsQuery,
  throughputQuery,
  type MetricsScopeQuery,
} from '../../../schemas/metrics.schema.js';
import { requireScope } from '../plugins/auth.plugin.js';
import { BucketsRepository } from '../buckets/buckets.repository.js';
import { ConsumersRepository } from '../consumers/consumers.repository.js';
import { resolveRange, type Query } from '../metrics/metrics-range.js';
import { MetricsRepository } from '../metrics/metrics.repository.js';

/**
 * Metrics (docs/metrics.md): the plain answers on the spec's paths, the comparison summary and the
 * throughput and response-time periods under /metrics/shapeA.
 * Every answer is read from the per-minute aggregates; see docs/metrics.md for the time model.
 */
export default async function metricsRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const repo = new MetricsRepository(app.deps.ch, app.deps.pg, app.deps.cfg.clickhouse.retentionDays);
  const buckets = new BucketsRepository(app.deps.pg);
  const consumers = new ConsumersRepository(app.deps.ch, app.deps.pg, app.deps.cfg.clickhouse.retentionDays);
  const base = '/v1/accounts/:accountSid/metrics';
  const pre = requireScope('metrics:read');

  /**
   * The query scope; a bucketSid outside the caller's account is a 404 like any other bucket. A
   * group (a filter, or a grouping by group) is resolved with the names and groups set through
   * the API (docs/consumers.md).
   */
  async function scope(accountSid: string, q: MetricsScopeQuery, groupBy?: string): Promise<Query> {
    const range = resolveRange(q, Date.now());
    if (q.bucketSid !== undefined) await buckets.get(accountSid, q.bucketSid);
    const byGroup = q.group !== undefined || groupBy === 'group';
    return {
      accountSid,
      bucketSid: q.bucketSid,
      environmentSid: q.environmentSid,
      endpoint: q.endpoint,
      method: q.method,
      ...(q.consumer !== undefined ? { consumer: q.consumer } : {}),
      ...(q.group !== undefined ? { group: q.group } : {}),
      ...(byGroup ? { overrides: await consumers.overrides(accountSid) } : {}),
      range,
    };
  }

  const schema = <const Q extends object, const Id extends SchemaId>(
    querystring: Q,
    id: Id,
    summary: string,
  ) =>
    ({
      tags: ['metrics'],
      summary,
      params: accountParams,
      querystring,
      response: { 200: ref(id) },
    }) as const;

  app.get(
    `${base}/summary`,
    { preHandler: pre, schema: schema(metricsScopeQuery, 'metricsSummary', 'Metrics summary') },
    async (req) => repo.summary(await scope(req.params.accountSid, req.query)),
  );

  app.get(
    `${base}/throughput`,
    { preHandler: pre, schema: schema(throughputQuery, 'metricsThroughput', 'Throughput series') },
    async (req) => repo.throughput(await scope(req.params.accountSid, req.query), req.query.interval),
  );

  app.get(
    `${base}/performance`,
    {
      preHandler: pre,
      schema: schema(performanceQuery, 'metricsPerformance', 'Response times per group'),
    },
    async (req) =>
      repo.performance(
        await scope(req.params.accountSid, req.query, req.query.groupBy),
        req.query.groupBy,
        req.query.limit,
        { interval: req.query.interval, histogram: req.query.histogram },
      ),
  );

  app.get(
    `${base}/errors`,
    { preHandler: pre, schema: schema(errorsQuery, 'metricsErrors', 'Errors') },
    async (req) =>
      repo.errors(await scope(req.params.accountSid, req.query), req.query.statusCode, req.query.limit),
  );

  app.get(
    `${base}/shapeA/summary`,
    {
      preHandler: pre,
      schema: schema(metricsScopeQuery, 'metricsShapeASummary', 'Summary against the previous period'),
    },
    async (req) => repo.comparisonSummary(await scope(req.params.accountSid, req.query)),
  );

  app.get(
    `${base}/shapeA/throughput`,
    {
      preHandler: pre,
      schema: schema(throughputPeriodsQuery, 'metricsShapeAThroughput', 'Throughput periods'),
    },
    async (req) =>
      repo.throughputPeriods(
        await scope(req.params.accountSid, req.query),
        req.query.interval,
        req.query.averageUnits,
      ),
  );

  app.get(
    `${base}/shapeA/responseTime`,
    {
      preHandler: pre,
      schema: schema(responseTimePeriodsQuery, 'metricsShapeAResponseTime', 'Response-time periods'),
    },
    async (req) =>
      repo.responseTimePeriods(await scope(req.params.accountSid, req.query), req.query.interval),
  );
}
