import type { FastifyInstance } from 'fastify';
import { sidParams } from '../../../schemas/common.schema.js';
import { ref } from '../../../schemas/index.js';
import { IMPACT_WINDOW_LIMITS } from '../../../schemas/slo.schema.js';
import { ImpactService } from '../../releases/impact.service.js';
import { ReleaseSettingsRepository, type ImpactWindows } from '../../releases/release-settings.repository.js';
import type { SchemaTypes } from '../api.types.js';
import { requireScope } from '../plugins/auth.plugin.js';

const params = sidParams('accountSid', 'eventSid');

/** Each length left out is the buckets' setting (releaseSettings below; 30, 30 and 2 by default). */
const query = {
  type: 'object',
  additionalProperties: false,
  properties: IMPACT_WINDOW_LIMITS,
} as const;

const bucketParams = sidParams('accountSid', 'bucketSid');

/** Release impact of deployment events and the per-bucket windows it uses (docs/releases.md). */
export default async function releasesRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const impact = new ImpactService(app.deps.pg, app.deps.ch);
  const settings = new ReleaseSettingsRepository(app.deps.pg);

  app.get(
    '/v1/accounts/:accountSid/events/:eventSid/impact',
    {
      preHandler: requireScope('events:read'),
      schema: {
        tags: ['events'],
        summary: 'Before/after verdict per endpoint of a deployment event',
        description:
          'Per endpoint and method: the window before the marker against the window after it ' +
          "(the buckets' release settings, by default 30 and 30 minutes with the first 2 minutes " +
          'after the marker skipped; the query parameters override them), with a ' +
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
        beforeMinutes: q.beforeMinutes,
        afterMinutes: q.afterMinutes,
        settleMinutes: q.settleMinutes,
      });
    },
  );

  const settingsPath = '/v1/accounts/:accountSid/buckets/:bucketSid/releaseSettings';
  app.get(
    settingsPath,
    {
      preHandler: requireScope('buckets:read'),
      schema: {
        tags: ['buckets'],
        summary: "The bucket's release impact windows",
        params: bucketParams,
        response: { 200: ref('releaseSettings') },
      },
    },
    async (req) => settings.get(req.params.accountSid, req.params.bucketSid),
  );

  app.put(
    settingsPath,
    {
      preHandler: requireScope('buckets:write'),
      schema: {
        tags: ['buckets'],
        summary: "Set the bucket's release impact windows",
        description:
          'The minutes before and after a deployment marker its impact compares, and the settling ' +
          'minutes after the marker it skips (docs/releases.md "Windows").',
        params: bucketParams,
        body: ref('releaseSettingsUpdate'),
        response: { 200: ref('releaseSettings') },
      },
    },
    async (req) => settings.put(req.params.accountSid, req.params.bucketSid, req.body as ImpactWindows),
  );
}
