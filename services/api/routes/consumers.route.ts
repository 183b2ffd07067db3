import type { FastifyInstance } from 'fastify';
import { accountParams } from '../../../schemas/common.schema.js';
import { consumerGetQuery, consumerListQuery } from '../../../schemas/consumers.schema.js';
import { ref } from '../../../schemas/index.js';
import type { SchemaTypes } from '../api.types.js';
import { notFound } from '../../shared/errors.js';
import { BucketsRepository } from '../buckets.repository.js';
import { ConsumersRepository } from '../consumers.repository.js';
import { resolveRange } from '../metrics-range.js';
import { requireScope } from '../plugins/auth.plugin.js';

const bucketParams = {
  type: 'object',
  required: ['accountSid', 'bucketSid'],
  properties: { accountSid: { type: 'string', maxLength: 64 }, bucketSid: { type: 'string', maxLength: 64 } },
} as const;
const consumerParams = {
  type: 'object',
  required: ['accountSid', 'consumerId'],
  properties: {
    accountSid: { type: 'string', maxLength: 64 },
    consumerId: { type: 'string', minLength: 1, maxLength: 256 },
  },
} as const;

/**
 * API consumers (docs/consumers.md): a bucket's identification rules (the bucket's read and write
 * scopes), the consumers list and one consumer (`metrics:read`), and a consumer's name and group
 * (`buckets:write`).
 */
export default async function consumersRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const repo = new ConsumersRepository(app.deps.ch, app.deps.pg, app.deps.cfg.clickhouse.retentionDays);
  const buckets = new BucketsRepository(app.deps.pg);
  const tags = ['consumers'] as const;
  const identification = '/v1/accounts/:accountSid/buckets/:bucketSid/consumerIdentification';
  const base = '/v1/accounts/:accountSid/consumers';

  app.get(
    identification,
    {
      preHandler: requireScope('buckets:read'),
      schema: {
        tags,
        summary: "The bucket's consumer identification sources, in the order they are tried",
        params: bucketParams,
        response: { 200: ref('consumerIdentification') },
      },
    },
    async (req) => {
      const { accountSid, bucketSid } = req.params;
      await buckets.get(accountSid, bucketSid);
      return repo.getIdentification(accountSid, bucketSid);
    },
  );

  app.put(
    identification,
    {
      preHandler: requireScope('buckets:write'),
      schema: {
        tags,
        summary:
          "Replace the bucket's consumer identification sources (an empty list turns identification off)",
        params: bucketParams,
        body: ref('consumerIdentificationUpdate'),
        response: { 200: ref('consumerIdentification') },
      },
    },
    async (req) => {
      const { accountSid, bucketSid } = req.params;
      await buckets.get(accountSid, bucketSid);
      return repo.putIdentification(accountSid, bucketSid, req.body.sources);
    },
  );

  app.get(
    base,
    {
      preHandler: requireScope('metrics:read'),
      schema: {
        tags,
        summary: 'Consumers with traffic in the range, with their counts and percentiles',
        params: accountParams,
        querystring: consumerListQuery,
        response: { 200: ref('consumerList') },
      },
    },
    async (req) => {
      const { accountSid } = req.params;
      const q = req.query;
      if (q.bucketSid !== undefined) await buckets.get(accountSid, q.bucketSid);
      const range = resolveRange(q, Date.now());
      return repo.list({ accountSid, bucketSid: q.bucketSid, environmentSid: q.environmentSid, range }, q);
    },
  );

  app.get(
    `${base}/:consumerId`,
    {
      preHandler: requireScope('metrics:read'),
      schema: {
        tags,
        summary: 'One consumer over the range, with the endpoints it called',
        params: consumerParams,
        querystring: consumerGetQuery,
        response: { 200: ref('consumerDetail') },
      },
    },
    async (req) => {
      const { accountSid, consumerId } = req.params;
      const q = req.query;
      if (q.bucketSid !== undefined) await buckets.get(accountSid, q.bucketSid);
      const range = resolveRange(q, Date.now());
      const found = await repo.get(
        { accountSid, bucketSid: q.bucketSid, environmentSid: q.environmentSid, range },
        consumerId,
      );
      if (!found) throw notFound('Consumer');
      return found;
    },
  );

  app.put(
    `${base}/:consumerId`,
    {
      preHandler: requireScope('buckets:write'),
      schema: {
        tags,
        summary: "Set a consumer's name and/or group (null clears the value set here)",
        params: consumerParams,
        body: ref('consumerUpdate'),
        response: { 200: ref('consumerDetail') },
      },
    },
    async (req) => {
      const { accountSid, consumerId } = req.params;
      // Only a consumer the account has seen (or named before) can be named: an unknown id is a
      // 404 and writes nothing, like a PUT of any other resource that does not exist.
      const scope = { accountSid, range: resolveRange({}, Date.now()) };
      if (!(await repo.get(scope, consumerId))) throw notFound('Consumer');
      await repo.update(accountSid, consumerId, req.body);
      const found = await repo.get(scope, consumerId);
      if (!found) throw notFound('Consumer');
      return found;
    },
  );
}
