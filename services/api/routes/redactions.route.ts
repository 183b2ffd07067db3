import type { FastifyInstance } from 'fastify';
import { accountParams, listQuery } from '../../../schemas/common.schema.js';
import { validation } from '../../shared/errors.js';
import { parseFieldPath } from '../../shared/field-path.js';
import { requireScope } from '../plugins/auth.plugin.js';
import { RULE_SORTS } from '../exclusions.repository.js';
import { RedactionsRepository, type RedactionInput } from '../redactions.repository.js';
import type { ListQuery } from '../pagination.js';

const oneParams = {
  type: 'object',
  required: ['accountSid', 'redactionSid'],
  properties: { accountSid: { type: 'string' }, redactionSid: { type: 'string' } },
} as const;

type P = { accountSid: string; redactionSid: string };

/** What the schema cannot say: the field path's syntax, and `replace` needing its value. */
function checkRedaction(body: RedactionInput): void {
  const details: Record<string, string> = {};
  const parsed = parseFieldPath(body.fieldPath);
  if (!parsed.ok) details['body.fieldPath'] = parsed.error;
  if (body.redactionType === 'replace' && typeof body.replacementValue !== 'string')
    details['body.replacementValue'] = 'is required when redactionType is replace';
  if (Object.keys(details).length) throw validation('Request body is invalid', details);
}

export default async function redactionsRoutes(app: FastifyInstance): Promise<void> {
  const repo = new RedactionsRepository(app.deps.pg);
  const tags = ['redactions'];

  app.get<{ Params: { accountSid: string }; Querystring: ListQuery }>(
    '/v1/accounts/:accountSid/redactions',
    {
      preHandler: requireScope('redactions:read'),
      schema: {
        tags,
        summary: 'List redaction rules',
        params: accountParams,
        querystring: listQuery(RULE_SORTS, 'createdAt'),
        response: { 200: { $ref: 'redactionList#' } },
      },
    },
    async (req) => repo.list(req.params.accountSid, req.query),
  );

  app.get<{ Params: P }>(
    '/v1/accounts/:accountSid/redactions/:redactionSid',
    {
      preHandler: requireScope('redactions:read'),
      schema: {
        tags,
        summary: 'Get a redaction rule',
        params: oneParams,
        response: { 200: { $ref: 'redaction#' } },
      },
    },
    async (req) => repo.get(req.params.accountSid, req.params.redactionSid),
  );

  app.post<{ Params: { accountSid: string }; Body: RedactionInput }>(
    '/v1/accounts/:accountSid/redactions',
    {
      preHandler: requireScope('redactions:write'),
      schema: {
        tags,
        summary: 'Create a redaction rule',
        params: accountParams,
        body: { $ref: 'redactionCreate#' },
        response: { 201: { $ref: 'redaction#' } },
      },
    },
    async (req, reply) => {
      checkRedaction(req.body);
      return reply.status(201).send(await repo.create(req.params.accountSid, req.body));
    },
  );

  app.put<{ Params: P; Body: RedactionInput }>(
    '/v1/accounts/:accountSid/redactions/:redactionSid',
    {
      preHandler: requireScope('redactions:write'),
      schema: {
        tags,
        summary: 'Replace a redaction rule',
        description:
          'Full replace: omitted description becomes empty, omitted replacementValue null. ' +
          'Omitted redactAt/buckets/environments keep their value.',
        params: oneParams,
        body: { $ref: 'redactionUpdate#' },
        response: { 200: { $ref: 'redaction#' } },
      },
    },
    async (req) => {
      checkRedaction(req.body);
      return repo.update(req.params.accountSid, req.params.redactionSid, req.body);
    },
  );

  app.delete<{ Params: P }>(
    '/v1/accounts/:accountSid/redactions/:redactionSid',
    {
      preHandler: requireScope('redactions:delete'),
      schema: {
        tags,
        summary: 'Delete a redaction rule',
        params: oneParams,
        response: { 200: { $ref: 'deleted#' } },
      },
    },
    async (req) => {
      await repo.delete(req.params.accountSid, req.params.redactionSid);
      return { sid: req.params.redactionSid, deleted: true };
    },
  );
}
