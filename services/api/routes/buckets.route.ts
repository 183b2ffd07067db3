import type { FastifyInstance } from 'fastify';
import type { SchemaTypes } from '../api.types.js';
import { ref } from '../../../schemas/index.js';
import { accountParams, listQuery } from '../../../schemas/common.schema.js';
import { requireScope } from '../plugins/auth.plugin.js';
import { BUCKET_SORTS, BucketsRepository } from '../buckets/buckets.repository.js';
import { RequestsRepository } from '../requests/requests.repository.js';

const bucketParams = {
  type: 'object',
  required: ['accountSid', 'bucketSid'],
  properties: { accountSid: { type: 'string' }, bucketSid: { type: 'string' } },
} as const;

export default async function bucketsRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const repo = new BucketsRepository(app.deps.pg);
  const requests = new RequestsRepository(app.deps.ch, app.deps.pg);

  app.get(
    '/v1/accounts/:accountSid/buckets',
    {
      preHandler: requireScope('buckets:read'),
      schema: {
        tags: ['buckets'],
        params: accountParams,
        querystring: listQuery(BUCKET_SORTS, 'createdAt'),
        response: { 200: ref('bucketList') },
      },
    },
    async (req) => repo.list(req.params.accountSid, req.query),
  );

  app.get(
    '/v1/accounts/:accountSid/buckets/:bucketSid',
    {
      preHandler: requireScope('buckets:read'),
      schema: { tags: ['buckets'], params: bucketParams, response: { 200: ref('bucket') } },
    },
    async (req) => repo.get(req.params.accountSid, req.params.bucketSid),
  );

  app.post(
    '/v1/accounts/:accountSid/buckets',
    {
      preHandler: requireScope('buckets:write'),
      schema: {
        tags: ['buckets'],
        params: accountParams,
        body: ref('bucketCreate'),
        response: { 201: ref('bucket') },
      },
    },
    async (req, reply) => reply.status(201).send(await repo.create(req.params.accountSid, req.body)),
  );

  app.put(
    '/v1/accounts/:accountSid/buckets/:bucketSid',
    {
      preHandler: requireScope('buckets:write'),
      schema: {
        tags: ['buckets'],
        params: bucketParams,
        body: ref('bucketUpdate'),
        response: { 200: ref('bucket') },
      },
    },
    async (req) => repo.update(req.params.accountSid, req.params.bucketSid, req.body),
  );

  app.delete(
    '/v1/accounts/:accountSid/buckets/:bucketSid',
    {
      preHandler: requireScope('buckets:delete'),
      schema: { tags: ['buckets'], params: bucketParams, response: { 200: ref('deleted') } },
    },
    async (req) => {
      const { accountSid, bucketSid } = req.params;
      await repo.get(accountSid, bucketSid);
      // ClickHouse first: if it fails the bucket still exists and the delete can be retried.
      await requests.deleteBucket(accountSid, bucketSid);
      await repo.delete(accountSid, bucketSid);
      return { sid: bucketSid, deleted: true };
    },
  );
}
