import type { FastifyInstance } from 'fastify';
import { sidParams } from '../../../schemas/common.schema.js';
import type { SchemaTypes } from '../api.types.js';
import { ref } from '../../../schemas/index.js';
import { requireScope } from '../plugins/auth.plugin.js';
import { BucketsRepository } from '../buckets/buckets.repository.js';
import { registerSdkRoute } from '../sdk/sdk-bootstrap.js';
import { SdkSettingsRepository } from '../sdk/sdk-settings.repository.js';

const params = sidParams('accountSid', 'bucketSid');

/**
 * The SDK bootstrap `GET /v1/buckets/{b}/sdk` (services/api/sdk/sdk-bootstrap.ts, shared with the
 * ingest listener) and the bucket's configurable SDK settings it serves.
 */
export default async function sdkRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  registerSdkRoute(app, { pg: app.deps.pg, principalOf: async (req) => req.principal });

  const buckets = new BucketsRepository(app.deps.pg);
  const settings = new SdkSettingsRepository(app.deps.pg);
  const path = '/v1/accounts/:accountSid/buckets/:bucketSid/sdkSettings';

  app.get(
    path,
    {
      preHandler: requireScope('buckets:read'),
      schema: {
        tags: ['buckets'],
        summary: 'Get the SDK settings of a bucket',
        description: 'Every setting with its value, and the defaults (docs/rules.md, "SDK settings").',
        params,
        response: { 200: ref('bucketSdkSettings') },
      },
    },
    async (req) => {
      await buckets.get(req.params.accountSid, req.params.bucketSid);
      return settings.get(req.params.bucketSid);
    },
  );

  app.put(
    path,
    {
      preHandler: requireScope('buckets:write'),
      schema: {
        tags: ['buckets'],
        summary: 'Change SDK settings of a bucket',
        description:
          'Partial update: the settings in the body change, the others keep their value. SDKs see ' +
          'the change on their next `GET /v1/buckets/{bucketSid}/sdk`.',
        params,
        body: ref('sdkSettingsUpdate'),
        response: { 200: ref('bucketSdkSettings') },
      },
    },
    async (req) => {
      await buckets.get(req.params.accountSid, req.params.bucketSid);
      return settings.update(req.params.accountSid, req.params.bucketSid, req.body);
    },
  );
}
