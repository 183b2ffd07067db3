import type { FastifyInstance } from 'fastify';
import { ref } from '../../../schemas/index.js';
import { accountParams, sidParams } from '../../../schemas/common.schema.js';
import { sloStatus } from '../../slo/slo.status.js';
import { SlosRepository, type SloInput } from '../../slo/slos.repository.js';
import type { SchemaTypes } from '../api.types.js';
import { requireScope } from '../plugins/auth.plugin.js';

const sloParams = sidParams('accountSid', 'sloSid');

const listQuery = {
  type: 'object',
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 25 },
    page: { type: 'integer', minimum: 1, maximum: 1_000_000, default: 1 },
  },
} as const;

/**
 * Service level objectives (docs/slos.md). Definitions need `workflows:write` / `workflows:delete`
 * (they drive `slo_burn` alerts); reading them and their status needs `metrics:read`.
 */
export default async function slosRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const repo = new SlosRepository(app.deps.pg);
  const tags = ['slos'];
  const path = '/v1/accounts/:accountSid/slos';

  app.get(
    path,
    {
      preHandler: requireScope('metrics:read'),
      schema: {
        tags,
        summary: 'List the SLOs of an account, oldest first',
        params: accountParams,
        querystring: listQuery,
        response: { 200: ref('sloList') },
      },
    },
    async (req) => repo.list(req.params.accountSid, req.query),
  );

  app.post(
    path,
    {
      preHandler: requireScope('workflows:write'),
      schema: {
        tags,
        summary: 'Create an SLO',
        params: accountParams,
        body: ref('sloCreate'),
        response: { 201: ref('slo') },
      },
    },
    async (req, reply) =>
      reply.status(201).send(await repo.create(req.params.accountSid, req.body as SloInput)),
  );

  app.get(
    `${path}/:sloSid`,
    {
      preHandler: requireScope('metrics:read'),
      schema: { tags, summary: 'One SLO', params: sloParams, response: { 200: ref('slo') } },
    },
    async (req) => repo.get(req.params.accountSid, req.params.sloSid),
  );

  app.put(
    `${path}/:sloSid`,
    {
      preHandler: requireScope('workflows:write'),
      schema: {
        tags,
        summary: 'Replace an SLO definition',
        params: sloParams,
        body: ref('sloUpdate'),
        response: { 200: ref('slo') },
      },
    },
    async (req) => repo.update(req.params.accountSid, req.params.sloSid, req.body as SloInput),
  );

  app.delete(
    `${path}/:sloSid`,
    {
      preHandler: requireScope('workflows:delete'),
      schema: { tags, summary: 'Delete an SLO', params: sloParams, response: { 200: ref('deleted') } },
    },
    async (req) => {
      await repo.delete(req.params.accountSid, req.params.sloSid);
      return { sid: req.params.sloSid, deleted: true };
    },
  );

  app.get(
    `${path}/:sloSid/status`,
    {
      preHandler: requireScope('metrics:read'),
      schema: {
        tags,
        summary: 'SLI, error budget, burn rates, state and daily series of an SLO now',
        params: sloParams,
        response: { 200: ref('sloStatus') },
      },
    },
    async (req) => sloStatus(app.deps.ch, await repo.get(req.params.accountSid, req.params.sloSid)),
  );
}
