import type { FastifyInstance, preValidationAsyncHookHandler } from 'fastify';
import { accountParams, listQuery } from '../../../schemas/common.schema.js';
import { requireScope } from '../plugins/auth.plugin.js';
import { ExclusionsRepository, RULE_SORTS, type ExclusionInput } from '../exclusions.repository.js';
import type { ListQuery } from '../pagination.js';

const oneParams = {
  type: 'object',
  required: ['accountSid', 'exclusionSid'],
  properties: { accountSid: { type: 'string' }, exclusionSid: { type: 'string' } },
} as const;

type P = { accountSid: string; exclusionSid: string };

/** Methods are case-insensitive on input; upper-casing before validation lets the enum stay simple. */
export const upperCaseMethod: preValidationAsyncHookHandler = async (req) => {
  const body = req.body as { method?: unknown } | null | undefined;
  if (body && typeof body === 'object' && typeof body.method === 'string')
    body.method = body.method.toUpperCase();
};

export default async function exclusionsRoutes(app: FastifyInstance): Promise<void> {
  const repo = new ExclusionsRepository(app.deps.pg);
  const tags = ['exclusions'];

  app.get<{ Params: { accountSid: string }; Querystring: ListQuery }>(
    '/v1/accounts/:accountSid/exclusions',
    {
      preHandler: requireScope('exclusions:read'),
      schema: {
        tags,
        summary: 'List exclusion rules',
        params: accountParams,
        querystring: listQuery(RULE_SORTS, 'createdAt'),
        response: { 200: { $ref: 'exclusionList#' } },
      },
    },
    async (req) => repo.list(req.params.accountSid, req.query),
  );

  app.get<{ Params: P }>(
    '/v1/accounts/:accountSid/exclusions/:exclusionSid',
    {
      preHandler: requireScope('exclusions:read'),
      schema: {
        tags,
        summary: 'Get an exclusion rule',
        params: oneParams,
        response: { 200: { $ref: 'exclusion#' } },
      },
    },
    async (req) => repo.get(req.params.accountSid, req.params.exclusionSid),
  );

  app.post<{ Params: { accountSid: string }; Body: ExclusionInput }>(
    '/v1/accounts/:accountSid/exclusions',
    {
      preValidation: upperCaseMethod,
      preHandler: requireScope('exclusions:write'),
      schema: {
        tags,
        summary: 'Create an exclusion rule',
        params: accountParams,
        body: { $ref: 'exclusionCreate#' },
        response: { 201: { $ref: 'exclusion#' } },
      },
    },
    async (req, reply) => reply.status(201).send(await repo.create(req.params.accountSid, req.body)),
  );

  app.put<{ Params: P; Body: ExclusionInput }>(
    '/v1/accounts/:accountSid/exclusions/:exclusionSid',
    {
      preValidation: upperCaseMethod,
      preHandler: requireScope('exclusions:write'),
      schema: {
        tags,
        summary: 'Replace an exclusion rule',
        description:
          'Full replace: omitted description becomes empty, omitted statusCode becomes null. ' +
          'Omitted buckets/environments keep their value.',
        params: oneParams,
        body: { $ref: 'exclusionUpdate#' },
        response: { 200: { $ref: 'exclusion#' } },
      },
    },
    async (req) => repo.update(req.params.accountSid, req.params.exclusionSid, req.body),
  );

  app.delete<{ Params: P }>(
    '/v1/accounts/:accountSid/exclusions/:exclusionSid',
    {
      preHandler: requireScope('exclusions:delete'),
      schema: {
        tags,
        summary: 'Delete an exclusion rule',
        params: oneParams,
        response: { 200: { $ref: 'deleted#' } },
      },
    },
    async (req) => {
      await repo.delete(req.params.accountSid, req.params.exclusionSid);
      return { sid: req.params.exclusionSid, deleted: true };
    },
  );
}
