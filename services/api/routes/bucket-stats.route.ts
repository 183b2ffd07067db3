import type { FastifyInstance } from 'fastify';
import { sidParams } from '../../../schemas/common.schema.js';
import type { SchemaTypes } from '../api.types.js';
import { TABLES } from '../../shared/tables.js';
import { BucketsRepository } from '../buckets/buckets.repository.js';
import { requireScope } from '../plugins/auth.plugin.js';

const params = sidParams('accountSid', 'bucketSid');

const count = { type: 'integer', minimum: 0 } as const;

const response = {
  type: 'object',
  required: ['bucketSid', 'excluded'],
  properties: {
    bucketSid: { type: 'string' },
    excluded: {
      type: 'object',
      required: ['total', 'last24h'],
      properties: { total: count, last24h: count },
    },
  },
} as const;

/**
 * Designed endpoint (not in the spec): what processing did with a bucket's traffic beyond storing
 * it. `excluded` counts records dropped by exclusion rules (never stored): `total` over the
 * retention period, `last24h` for records created in the last 24 hours (docs/processing.md).
 */
export default async function bucketStatsRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const buckets = new BucketsRepository(app.deps.pg);
  app.get(
    '/v1/accounts/:accountSid/buckets/:bucketSid/stats',
    {
      preHandler: requireScope('buckets:read'),
      schema: {
        tags: ['buckets'],
        summary: 'Processing counters of a bucket (records excluded by exclusion rules)',
        params,
        response: { 200: response },
      } as const,
    },
    async (req) => {
      const { accountSid, bucketSid } = req.params;
      await buckets.get(accountSid, bucketSid);
      const rs = await app.deps.ch.query({
        query: `SELECT toInt64(sum(excluded)) AS total,
                       toInt64(sumIf(excluded, minute >= now() - INTERVAL 24 HOUR)) AS last24h
                FROM ${TABLES.excludedMinute}
                WHERE account_sid = {a:String} AND bucket_sid = {b:String}`,
        query_params: { a: accountSid, b: bucketSid },
        format: 'JSONEachRow',
      });
      const [row] = await rs.json<{ total: number | string; last24h: number | string }>();
      return {
        bucketSid,
        excluded: {
          total: Math.max(0, Number(row?.total ?? 0)),
          last24h: Math.max(0, Number(row?.last24h ?? 0)),
        },
      };
    },
  );
}
