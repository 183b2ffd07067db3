import type { FastifyInstance } from 'fastify';
import { sdkQuery } from '../../../schemas/rules.schema.js';
import { requireScope } from '../plugins/auth.plugin.js';
import { BucketsRepository } from '../buckets.repository.js';
import { ExclusionsRepository } from '../exclusions.repository.js';
import { RedactionsRepository, type RedactAt } from '../redactions.repository.js';

const params = {
  type: 'object',
  required: ['bucketSid'],
  properties: { bucketSid: { type: 'string', maxLength: 64 } },
} as const;

type Q = { redactAt: RedactAt; clientId: string; environmentSid?: string };

/**
 * SDK settings (spec 4.4): what an SDK connected to a bucket applies itself. With
 * `redactAt=client` the redaction rules are the SDK's to apply; with `redactAt=server` they are
 * listed for information only, since the processor applies them (never twice). Exclusions are
 * always listed: dropping traffic in the SDK saves a round trip, and the processor re-applies them
 * idempotently. The path has no account segment, so the bucket is looked up in the caller's account.
 */
export default async function sdkRoutes(app: FastifyInstance): Promise<void> {
  const buckets = new BucketsRepository(app.deps.pg);
  const exclusions = new ExclusionsRepository(app.deps.pg);
  const redactions = new RedactionsRepository(app.deps.pg);

  app.get<{ Params: { bucketSid: string }; Querystring: Q }>(
    '/v1/buckets/:bucketSid/sdk',
    {
      preHandler: requireScope('buckets:read'),
      schema: {
        tags: ['buckets'],
        summary: 'SDK settings of a bucket',
        params,
        querystring: sdkQuery,
        response: { 200: { $ref: 'sdkSettings#' } },
      },
    },
    async (req) => {
      const accountSid = req.principal.accountSid;
      const { bucketSid } = req.params;
      const { redactAt, clientId, environmentSid } = req.query;
      await buckets.get(accountSid, bucketSid);
      const [rdc, xcl] = await Promise.all([
        redactions.activeFor(accountSid, bucketSid, redactAt, environmentSid),
        exclusions.activeFor(accountSid, bucketSid, environmentSid),
      ]);
      return {
        bucketSid,
        clientId,
        redactAt,
        redactionRules: rdc.map((r) => ({
          sid: r.sid,
          field: r.fieldPath,
          action: r.redactionType,
          ...(r.redactionType === 'replace' && r.replacementValue !== null
            ? { replacement: r.replacementValue }
            : {}),
          environments: r.environments,
        })),
        exclusionRules: xcl.map((x) => ({
          sid: x.sid,
          path: x.pathPattern,
          method: x.method,
          statusCode: x.statusCode,
          environments: x.environments,
        })),
        settings: { interceptOutbound: true, debug: false },
      };
    },
  );
}
