import type { FastifyInstance } from 'fastify';
import type { alertSchema } from '../../../schemas/alert.schema.js';
import { ALERT_STATES } from '../../../schemas/alert.schema.js';
import { accountParams, environmentSid } from '../../../schemas/common.schema.js';
import { ref, type Reply } from '../../../schemas/index.js';
import { AlertsRepository } from '../workflows/alerts.repository.js';
import type { SchemaTypes } from '../api.types.js';
import { BucketsRepository } from '../buckets/buckets.repository.js';
import { requireScope } from '../plugins/auth.plugin.js';

const alertQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    bucketSid: { type: 'string', maxLength: 64 },
    environmentSid,
    state: { type: 'string', enum: ALERT_STATES },
  },
} as const;

/**
 * Alerts (docs/workflows-api.md "Alerts"): the account's threshold and error workflows with their
 * state and latest executions, read-only; they are created and changed as workflows.
 */
export default async function alertsRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const repo = new AlertsRepository(app.deps.pg);
  const buckets = new BucketsRepository(app.deps.pg);

  app.get(
    '/v1/accounts/:accountSid/alerts',
    {
      preHandler: requireScope('workflows:read'),
      schema: {
        tags: ['workflows'],
        summary: 'List threshold and error alerts with their state and latest executions',
        params: accountParams,
        querystring: alertQuery,
        response: { 200: ref('alertList') },
      },
    },
    async (req) => {
      const { bucketSid, environmentSid: env, state } = req.query;
      // Another account's or an unknown bucket is a 404, as for every bucket-scoped read.
      if (bucketSid !== undefined) await buckets.get(req.params.accountSid, bucketSid);
      const records = await repo.list(req.params.accountSid, { bucketSid, environmentSid: env, state });
      // The rows hold exactly the schema's fields; their string columns are typed wider than its enums.
      return { hasMore: false, records: records as unknown as Reply<typeof alertSchema>[] };
    },
  );
}
