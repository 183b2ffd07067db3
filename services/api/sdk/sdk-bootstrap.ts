import type { FastifyInstance, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { sdkQuery } from '../../../schemas/rules.schema.js';
import type { Principal } from '../../shared/credentials.js';
import { AppError } from '../../shared/errors.js';
import { BucketsRepository } from '../buckets/buckets.repository.js';
import { ExclusionsRepository } from '../rules/exclusions.repository.js';
import { RedactionsRepository, type RedactAt } from '../rules/redactions.repository.js';
import { SdkSettingsRepository } from './sdk-settings.repository.js';

/**
 * Either scope opens `/sdk`: `buckets:read` (a reader, the dashboard) or `requests:write` (the
 * ingest token an SDK holds, the "Ingest only" preset). The first is named when both are missing.
 */
export const SDK_SCOPES = ['buckets:read', 'requests:write'] as const;

export function checkSdkScope(principal: Principal): void {
  if (SDK_SCOPES.some((s) => principal.scopes.has(s))) return;
  throw new AppError(403, 'FORBIDDEN', `Token lacks the scope ${SDK_SCOPES[0]} (or ${SDK_SCOPES[1]})`, {
    requiredScope: SDK_SCOPES[0],
    anyOf: [...SDK_SCOPES],
  });
}

const params = {
  type: 'object',
  required: ['bucketSid'],
  properties: { bucketSid: { type: 'string', maxLength: 64 } },
} as const;

type Q = { redactAt: RedactAt; clientId: string; environmentSid?: string };

/**
 * `GET /v1/buckets/{bucketSid}/sdk` (docs/rules.md): what an SDK connected to a bucket applies itself.
 * Registered on the API listener and on the ingest listener with the same code; `principalOf` authenticates
 * the request as each listener does. With `redactAt=client` the field redaction rules are the SDK's to apply;
 * with `redactAt=server` they are listed for information only, since the processor applies them (never
 * twice). Exclusions are always listed: dropping traffic in the SDK saves a round trip, and the processor
 * re-applies them idempotently. Sensitive-data and criteria rules come in their own arrays, present only when
 * there is at least one, so the answer for an account without them is unchanged: `sensitiveRules`
 * (sensitive-data redactions of the asked `redactAt`, in the form the sensitive-data engine compiles) and
 * `exclusionCriteria`. The processor applies every enabled sensitive-data redaction, `client` ones included,
 * as a safety net (applying one twice changes nothing more). `settings` are the bucket's stored SDK settings
 * over their defaults. All of it: docs/rules.md, "SDK settings". The path has no account segment, so the
 * bucket is looked up in the caller's account.
 */
export function registerSdkRoute(
  app: FastifyInstance,
  deps: { pg: pg.Pool; principalOf: (req: FastifyRequest) => Promise<Principal> },
): void {
  const buckets = new BucketsRepository(deps.pg);
  const exclusions = new ExclusionsRepository(deps.pg);
  const redactions = new RedactionsRepository(deps.pg);
  const settings = new SdkSettingsRepository(deps.pg);
  const principals = new WeakMap<FastifyRequest, Principal>();

  app.get<{ Params: { bucketSid: string }; Querystring: Q }>(
    '/v1/buckets/:bucketSid/sdk',
    {
      preHandler: async (req) => {
        const principal = await deps.principalOf(req);
        checkSdkScope(principal);
        principals.set(req, principal);
      },
      schema: {
        tags: ['buckets'],
        summary: 'SDK settings of a bucket',
        description:
          'Needs buckets:read or requests:write (an ingest token). Also served on the ingest listener.',
        params,
        querystring: sdkQuery,
        response: { 200: { $ref: 'sdkSettings#' } },
      },
    },
    async (req) => {
      const accountSid = principals.get(req)!.accountSid;
      const { bucketSid } = req.params;
      const { redactAt, clientId, environmentSid } = req.query;
      await buckets.get(accountSid, bucketSid);
      const [rdc, xcl, sensitive, criteria, own] = await Promise.all([
        redactions.activeFor(accountSid, bucketSid, redactAt, environmentSid),
        exclusions.activeFor(accountSid, bucketSid, environmentSid),
        redactions.activeSensitiveFor(accountSid, bucketSid, redactAt, environmentSid),
        exclusions.activeCriteriaFor(accountSid, bucketSid, environmentSid),
        settings.get(bucketSid),
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
        ...(sensitive.length ? { sensitiveRules: sensitive } : {}),
        ...(criteria.length
          ? {
              exclusionCriteria: criteria.map((x) => ({
                sid: x.sid,
                criteria: x.criteria,
                environments: x.environments,
              })),
            }
          : {}),
        settings: own.settings,
      };
    },
  );
}
