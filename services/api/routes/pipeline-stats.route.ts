import type { FastifyInstance } from 'fastify';
import type { SchemaTypes } from '../api.types.js';
import { validation } from '../../shared/errors.js';
import { TABLES } from '../../shared/tables.js';
import { requireScope } from '../plugins/auth.plugin.js';
import { BucketsRepository } from '../buckets/buckets.repository.js';

const querystring = {
  type: 'object',
  required: ['bucketSid'],
  properties: {
    bucketSid: { type: 'string', maxLength: 64 },
    startDate: { type: 'string', format: 'date-time' },
    endDate: { type: 'string', format: 'date-time' },
  },
} as const;

const response = {
  type: 'object',
  required: ['bucketSid', 'stored', 'freshness'],
  properties: {
    bucketSid: { type: 'string' },
    stored: { type: 'integer' },
    firstStoredAt: { type: ['string', 'null'] },
    lastStoredAt: { type: ['string', 'null'] },
    freshness: {
      type: 'object',
      required: ['p50', 'p99', 'max'],
      properties: { p50: { type: 'number' }, p99: { type: 'number' }, max: { type: 'number' } },
    },
  },
} as const;

/**
 * Designed endpoint (not in the spec): what the pipeline did with a bucket's traffic — how many
 * records are stored (exact, from raw rows) and how fresh they were: milliseconds from the ingest
 * listener's receive time (`receivedAt`) to the ClickHouse insert (`storedAt`), exact quantiles.
 * Used by operators and by the benchmark.
 */
export default async function pipelineStatsRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const buckets = new BucketsRepository(app.deps.pg);
  app.get(
    '/v1/accounts/:accountSid/pipeline/stats',
    {
      preHandler: requireScope('requests:read'),
      schema: {
        tags: ['pipeline'],
        summary: 'Stored-record count and freshness of a bucket',
        params: { type: 'object', required: ['accountSid'], properties: { accountSid: { type: 'string' } } },
        querystring,
        response: { 200: response },
      } as const,
    },
    async (req) => {
      const { accountSid } = req.params;
      const { bucketSid, startDate, endDate } = req.query;
      await buckets.get(accountSid, bucketSid);
      if (startDate && endDate && Date.parse(startDate) > Date.parse(endDate)) {
        throw validation('startDate is after endDate', { startDate: 'must not be after endDate' });
      }
      const where = ['account_sid = {a:String}', 'bucket_sid = {b:String}'];
      const params: Record<string, unknown> = { a: accountSid, b: bucketSid };
      if (startDate) {
        where.push("received_at >= parseDateTime64BestEffort({s:String}, 3, 'UTC')");
        params.s = startDate;
      }
      if (endDate) {
        where.push("received_at <= parseDateTime64BestEffort({e:String}, 3, 'UTC')");
        params.e = endDate;
      }
      const rs = await app.deps.ch.query({
        query: `SELECT count() AS stored,
                  toString(min(stored_at)) AS first, toString(max(stored_at)) AS last,
                  quantilesExact(0.5, 0.99)(dateDiff('millisecond', received_at, stored_at)) AS q,
                  max(dateDiff('millisecond', received_at, stored_at)) AS mx
                FROM ${TABLES.requests} WHERE ${where.join(' AND ')}`,
        query_params: params,
        format: 'JSONEachRow',
      });
      const [row] = await rs.json<{
        stored: number | string;
        first: string;
        last: string;
        q: number[];
        mx: number;
      }>();
      const stored = Number(row?.stored ?? 0);
      const ts = (s: string | undefined) =>
        stored && s ? new Date(s.replace(' ', 'T') + 'Z').toISOString() : null;
      return {
        bucketSid,
        stored,
        firstStoredAt: ts(row?.first),
        lastStoredAt: ts(row?.last),
        freshness: {
          p50: stored ? row!.q[0]! : 0,
          p99: stored ? row!.q[1]! : 0,
          max: stored ? Number(row!.mx) : 0,
        },
      };
    },
  );
}
