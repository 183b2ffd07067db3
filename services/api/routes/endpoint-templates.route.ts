import type { FastifyInstance } from 'fastify';
import { sidParams } from '../../../schemas/common.schema.js';
import { endpointTemplateSuggestionsQuery } from '../../../schemas/endpoint-template.schema.js';
import { ref } from '../../../schemas/index.js';
import type { SchemaTypes } from '../api.types.js';
import { BucketsRepository } from '../buckets/buckets.repository.js';
import { EndpointTemplatesRepository } from '../endpoint-templates/endpoint-templates.repository.js';
import { resolveRange } from '../metrics/metrics-range.js';
import { requireScope } from '../plugins/auth.plugin.js';

const bucketParams = sidParams('accountSid', 'bucketSid');
const templateParams = sidParams('accountSid', 'bucketSid', 'endpointTemplateSid');

/**
 * A bucket's endpoint template rules (docs/processing.md, "Endpoint templates"): list, read,
 * create, update and delete with the bucket's read and write scopes, and the suggestions drawn
 * from the range's endpoint metrics (`metrics:read`).
 */
export default async function endpointTemplatesRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const repo = new EndpointTemplatesRepository(
    app.deps.pg,
    app.deps.ch,
    app.deps.cfg.clickhouse.retentionDays,
  );
  const buckets = new BucketsRepository(app.deps.pg);
  const tags = ['endpointTemplates'] as const;
  const base = '/v1/accounts/:accountSid/buckets/:bucketSid/endpointTemplates';

  app.get(
    base,
    {
      preHandler: requireScope('buckets:read'),
      schema: {
        tags,
        summary: "The bucket's endpoint template rules, in the order the processor tries them",
        params: bucketParams,
        response: { 200: ref('endpointTemplateList') },
      },
    },
    async (req) => {
      const { accountSid, bucketSid } = req.params;
      await buckets.get(accountSid, bucketSid);
      return { hasMore: false, records: await repo.list(accountSid, bucketSid) };
    },
  );

  app.get(
    `${base}/suggestions`,
    {
      preHandler: requireScope('metrics:read'),
      schema: {
        tags,
        summary:
          'Patterns that would merge endpoints differing in one segment the automatic templating kept literal',
        params: bucketParams,
        querystring: endpointTemplateSuggestionsQuery,
        response: { 200: ref('endpointTemplateSuggestions') },
      },
    },
    async (req) => {
      const { accountSid, bucketSid } = req.params;
      await buckets.get(accountSid, bucketSid);
      const range = resolveRange(req.query, Date.now());
      return repo.suggestions(accountSid, bucketSid, range, req.query.environmentSid);
    },
  );

  app.get(
    `${base}/:endpointTemplateSid`,
    {
      preHandler: requireScope('buckets:read'),
      schema: { tags, params: templateParams, response: { 200: ref('endpointTemplate') } },
    },
    async (req) => {
      const { accountSid, bucketSid, endpointTemplateSid } = req.params;
      return repo.get(accountSid, bucketSid, endpointTemplateSid);
    },
  );

  app.post(
    base,
    {
      preHandler: requireScope('buckets:write'),
      schema: {
        tags,
        summary: 'Add a rule at the end of the list; records ingested after it are stored under its pattern',
        params: bucketParams,
        body: ref('endpointTemplateCreate'),
        response: { 201: ref('endpointTemplate') },
      },
    },
    async (req, reply) => {
      const { accountSid, bucketSid } = req.params;
      await buckets.get(accountSid, bucketSid);
      return reply.status(201).send(await repo.create(accountSid, bucketSid, req.body));
    },
  );

  app.put(
    `${base}/:endpointTemplateSid`,
    {
      preHandler: requireScope('buckets:write'),
      schema: {
        tags,
        summary: 'Change a rule; only the provided fields change',
        params: templateParams,
        body: ref('endpointTemplateUpdate'),
        response: { 200: ref('endpointTemplate') },
      },
    },
    async (req) => {
      const { accountSid, bucketSid, endpointTemplateSid } = req.params;
      return repo.update(accountSid, bucketSid, endpointTemplateSid, req.body);
    },
  );

  app.delete(
    `${base}/:endpointTemplateSid`,
    {
      preHandler: requireScope('buckets:write'),
      schema: { tags, params: templateParams, response: { 200: ref('deleted') } },
    },
    async (req) => {
      const { accountSid, bucketSid, endpointTemplateSid } = req.params;
      await repo.delete(accountSid, bucketSid, endpointTemplateSid);
      return { sid: endpointTemplateSid, deleted: true };
    },
  );
}
