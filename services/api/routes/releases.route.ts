import type { FastifyInstance } from 'fastify';
import { ref } from '../../../schemas/index.js';
import { DEFAULT_WINDOWS, ImpactService } from '../../releases/impact.service.js';
import type { SchemaTypes } from '../api.types.js';
import { requireScope } from '../plugins/auth.plugin.js';

const params = {
  type: 'object',
  required: ['accountSid', 'eventSid'],
  properties: { accountSid: { type: 'string', maxLength: 64 }, eventSid: { type: 'string', maxLength: 64 } },
} as const;

const query = {
  type: 'object',
  additionalProperties: false,
  properties: {
    beforeMinutes: { type: 'integer', minimum: 5, maximum: 1440, default: DEFAULT_WINDOWS.beforeMinutes },
    afterMinutes: { type: 'integer', minimum: 5, maximum: 1440, default: DEFAULT_WINDOWS.afterMinutes },
    settleMinutes: { type: 'integer', minimum: 0, maximum: 120, default: DEFAULT_WINDOWS.settleMinutes },
  },
} as const;

/** Release impact of deployment events (docs/releases.md). */
export default async function releasesRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const impact = new ImpactService(app.deps.pg, app.deps.ch);

  app.get(
    '/v1/accounts/:accountSid/events/:eventSid/impact',
    {
      preHandler: requireScope('events:read'),
      schema: {
        tags: ['events'],
        summary: 'Before/after verdict per endpoint of a deployment event',
        description:
          'Per endpoint and method: the window before the marker against the window after it ' +
          '(30 and 30 minutes by default, the first 2 minutes after the marker skipped), with a ' +
          'verdict regressed / improved / unchanged / insufficient by the rule of docs/releases.md, ' +
          'sorted by severity. `pending` until the after window has passed.',
        params,
        querystring: query,
        response: { 200: ref('releaseImpact') },
      },
    },
    async (req) => {
      const q = req.query;
      return impact.impact(req.params.accountSid, req.params.eventSid, {
        beforeMinutes: q.beforeMinutes ?? DEFAULT_WINDOWS.beforeMinutes,
        afterMinutes: q.afterMinutes ?? DEFAULT_WINDOWS.afterMinutes,
        settleMinutes: q.settleMinutes ?? DEFAULT_WINDOWS.settleMinutes,
      });
    },
  );
}
