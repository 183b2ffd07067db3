import type { FastifyInstance, FastifyRequest } from 'fastify';
import { accountParams } from '../../../schemas/common.schema.js';
import { shapeValidatorCompiler, upperCaseMethod } from './rule-routes.js';
import { forbidden, validation } from '../../shared/errors.js';
import type { StoredRecord } from '../../processor/pipeline.js';
import { requireScope } from '../plugins/auth.plugin.js';
import { BucketsRepository } from '../buckets/buckets.repository.js';
import { RequestsRepository } from '../requests/requests.repository.js';
import {
  checkRedactionDraft,
  previewExclusion,
  previewRedaction,
  sampleFromInput,
  type ExclusionDraft,
  type RedactionDraft,
} from '../rules/rules-preview.js';

interface Source {
  record?: Record<string, unknown>;
  bucketSid?: string;
  requestSid?: string;
}

/**
 * Designed endpoints (not in the spec): what a draft rule would do to one record, computed by the
 * processor's code (services/api/rules/rules-preview.ts). Nothing is stored. The sample is a pasted
 * record or a stored request (which needs requests:read as well).
 */
export default async function rulesPreviewRoutes(app: FastifyInstance): Promise<void> {
  const buckets = new BucketsRepository(app.deps.pg);
  const requests = new RequestsRepository(app.deps.ch, app.deps.pg);

  async function sampleOf(req: FastifyRequest, src: Source): Promise<StoredRecord> {
    const accountSid = req.principal.accountSid;
    if (src.requestSid !== undefined) {
      if (!req.principal.scopes.has('requests:read')) throw forbidden('requests:read');
      if (src.bucketSid === undefined)
        throw validation('Request body is invalid', { 'body.bucketSid': 'is required with requestSid' });
      return (await requests.get(accountSid, src.bucketSid, src.requestSid)) as StoredRecord;
    }
    if (src.record === undefined)
      throw validation('Request body is invalid', {
        'body.record': 'is required (or bucketSid and requestSid of a stored request)',
      });
    if (src.bucketSid !== undefined) await buckets.get(accountSid, src.bucketSid);
    return sampleFromInput(src.record, src.bucketSid ?? 'preview');
  }

  app.post<{ Params: { accountSid: string }; Body: Source & { rule: RedactionDraft } }>(
    '/v1/accounts/:accountSid/redactions/preview',
    {
      preHandler: requireScope('redactions:read'),
      validatorCompiler: shapeValidatorCompiler({
        kind: 'redaction',
        contentSchema: 'redactionPreviewBodyA',
        pathSchema: 'redactionPreviewBody',
        inside: 'rule',
      }),
      schema: {
        tags: ['redactions'],
        summary: 'Preview a draft redaction rule on a sample record',
        description:
          'Applies the draft rule to `record` (or to the stored request `bucketSid`/`requestSid`, which ' +
          'needs requests:read too) with the processor’s code and answers the record before and ' +
          'after, with every changed field. Nothing is stored.',
        params: accountParams,
        body: { $ref: 'redactionPreviewBodyAny#' },
        response: { 200: { $ref: 'redactionPreview#' } },
      },
    },
    async (req) => {
      checkRedactionDraft(req.body.rule);
      const sample = await sampleOf(req, req.body);
      return previewRedaction(req.params.accountSid, req.body.rule, sample, req.body.bucketSid);
    },
  );

  app.post<{ Params: { accountSid: string }; Body: Source & { rule: ExclusionDraft } }>(
    '/v1/accounts/:accountSid/exclusions/preview',
    {
      // The rule's method is case-insensitive, as on the exclusions API.
      preValidation: upperCaseMethod('rule'),
      preHandler: requireScope('exclusions:read'),
      validatorCompiler: shapeValidatorCompiler({
        kind: 'exclusion',
        contentSchema: 'exclusionPreviewBodyA',
        pathSchema: 'exclusionPreviewBody',
        inside: 'rule',
      }),
      schema: {
        tags: ['exclusions'],
        summary: 'Preview a draft exclusion rule on a sample record',
        description:
          'Whether the processor would drop `record` (or the stored request `bucketSid`/`requestSid`, ' +
          'which needs requests:read too) under the draft rule, with the values it compared. ' +
          'Nothing is stored.',
        params: accountParams,
        body: { $ref: 'exclusionPreviewBodyAny#' },
        response: { 200: { $ref: 'exclusionPreview#' } },
      },
    },
    async (req) => {
      const sample = await sampleOf(req, req.body);
      return previewExclusion(req.params.accountSid, req.body.rule, sample, req.body.bucketSid);
    },
  );
}
