import type { FastifyInstance } from 'fastify';
import type { SchemaTypes } from '../api.types.js';
import { ref } from '../../../schemas/index.js';
import type pg from 'pg';
import { listQuery } from '../../../schemas/common.schema.js';
import { BucketsRepository } from '../buckets/buckets.repository.js';
import { compileCriteria, type CompiledCriteria } from '../requests/criteria.compiler.js';
import { requireScope } from '../plugins/auth.plugin.js';
import { STREAM_VIEW_SORTS, StreamViewsRepository } from '../requests/stream-views.repository.js';
import type { CriteriaResolver } from './requests.route.js';

const bucketParams = {
  type: 'object',
  required: ['accountSid', 'bucketSid'],
  properties: { accountSid: { type: 'string', maxLength: 64 }, bucketSid: { type: 'string' } },
} as const;
const viewParams = {
  type: 'object',
  required: ['accountSid', 'bucketSid', 'streamViewSid'],
  properties: {
    accountSid: { type: 'string', maxLength: 64 },
    bucketSid: { type: 'string' },
    streamViewSid: { type: 'string' },
  },
} as const;

/**
 * `q=` and `view=` of the requests list: the view (same account and bucket, else 404) and the
 * text are compiled separately, with distinct placeholder prefixes, and AND-ed.
 */
export function streamViewCriteria(pool: pg.Pool): CriteriaResolver {
  const views = new StreamViewsRepository(pool);
  return async (accountSid, bucketSid, q) => {
    const parts: CompiledCriteria[] = [];
    if (q.view) {
      const view = await views.get(accountSid, bucketSid, q.view);
      parts.push(compileCriteria(view.criteria, { paramPrefix: 'sv', field: 'querystring.view' }));
    }
    if (q.q) parts.push(compileCriteria(q.q, { paramPrefix: 'q', field: 'querystring.q' }));
    if (!parts.length) return undefined;
    return {
      sql: parts.map((p) => `(${p.sql})`).join(' AND '),
      params: Object.assign({}, ...parts.map((p) => p.params)) as Record<string, unknown>,
    };
  };
}

/** Stream views (docs/search.md): saved searches under a bucket. Endpoints designed here (docs/architecture.md). */
export default async function streamViewsRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const repo = new StreamViewsRepository(app.deps.pg);
  const buckets = new BucketsRepository(app.deps.pg);
  const tags = ['streamViews'] as const;
  const base = '/v1/accounts/:accountSid/buckets/:bucketSid/streamViews';

  app.get(
    base,
    {
      preHandler: requireScope('streamViews:read'),
      schema: {
        tags,
        params: bucketParams,
        querystring: listQuery(STREAM_VIEW_SORTS, 'createdAt'),
        response: { 200: ref('streamViewList') },
      },
    },
    async (req) => {
      await buckets.get(req.params.accountSid, req.params.bucketSid);
      return repo.list(req.params.accountSid, req.params.bucketSid, req.query);
    },
  );

  app.get(
    `${base}/:streamViewSid`,
    {
      preHandler: requireScope('streamViews:read'),
      schema: { tags, params: viewParams, response: { 200: ref('streamView') } },
    },
    async (req) => repo.get(req.params.accountSid, req.params.bucketSid, req.params.streamViewSid),
  );

  app.post(
    base,
    {
      preHandler: requireScope('streamViews:write'),
      schema: {
        tags,
        summary: 'Save a search (criteria in the language of docs/search.md) as a stream view',
        params: bucketParams,
        body: ref('streamViewCreate'),
        response: { 201: ref('streamView') },
      },
    },
    async (req, reply) => {
      const { accountSid, bucketSid } = req.params;
      await buckets.get(accountSid, bucketSid);
      return reply.status(201).send(await repo.create(accountSid, bucketSid, req.body));
    },
  );

  app.put(
    `${base}/:streamViewSid`,
    {
      preHandler: requireScope('streamViews:write'),
      schema: {
        tags,
        summary: 'Update a stream view; only the provided fields change',
        params: viewParams,
        body: ref('streamViewUpdate'),
        response: { 200: ref('streamView') },
      },
    },
    async (req) =>
      repo.update(req.params.accountSid, req.params.bucketSid, req.params.streamViewSid, req.body),
  );

  app.delete(
    `${base}/:streamViewSid`,
    {
      preHandler: requireScope('streamViews:delete'),
      schema: { tags, params: viewParams, response: { 200: ref('deleted') } },
    },
    async (req) => {
      await repo.delete(req.params.accountSid, req.params.bucketSid, req.params.streamViewSid);
      return { sid: req.params.streamViewSid, deleted: true };
    },
  );
}
