import { createRequire } from 'node:module';
import { Ajv } from 'ajv';
import type { FastifyInstance, preValidationAsyncHookHandler } from 'fastify';
import { validate as isValidCron, validateDetailed as explainCron } from 'node-cron';
import { accountParams, environmentSid, listQuery } from '../../../schemas/common.schema.js';
import { ALL_SCHEMAS } from '../../../schemas/index.js';
import { EXECUTION_STATUSES } from '../../../schemas/workflow.schema.js';
import { notFound, validation } from '../../shared/errors.js';
import { ENVIRONMENT_SID } from '../../shared/ids.js';
import { requireScope } from '../plugins/auth.plugin.js';
import { BucketsRepository } from '../buckets.repository.js';
import type { ListQuery } from '../pagination.js';
import {
  EXECUTION_SORTS,
  WORKFLOW_SORTS,
  WorkflowsRepository,
  type WorkflowAction,
  type WorkflowInput,
  type WorkflowScope,
  type WorkflowTrigger,
} from '../workflows.repository.js';

// NOTE: ajv-formats is CJS whose typings do not resolve as callable under NodeNext; require() it.
const addFormats = createRequire(import.meta.url)('ajv-formats') as (ajv: Ajv) => Ajv;

/**
 * The workflow schemas use `oneOf` + `discriminator` so a bad trigger or action reports only the
 * errors of the branch its `type` names. Fastify's shared ajv has no discriminator support, so
 * these routes compile with their own instances. Bodies are not type-coerced (`"5"` is not a
 * number here); params and query strings are, as everywhere else.
 */
function workflowAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    useDefaults: true,
    coerceTypes: coerce ? 'array' : false,
    removeAdditional: false,
    strict: false,
    discriminator: true,
  });
  addFormats(ajv);
  for (const schema of ALL_SCHEMAS) ajv.addSchema(schema);
  return ajv;
}

const str = { type: 'string', maxLength: 64 } as const;
const scopeParams = {
  type: 'object',
  required: ['accountSid', 'environmentSid', 'bucketSid'],
  properties: { accountSid: str, environmentSid: str, bucketSid: str },
} as const;
const oneParams = {
  type: 'object',
  required: ['accountSid', 'environmentSid', 'bucketSid', 'workflowSid'],
  properties: { accountSid: str, environmentSid: str, bucketSid: str, workflowSid: str },
} as const;

const base = listQuery(WORKFLOW_SORTS, 'createdAt');
const accountListQuery = {
  ...base,
  properties: {
    ...base.properties,
    bucketSid: str,
    environmentSid,
    isActive: { type: 'boolean' },
  },
} as const;
const scopedListQuery = {
  ...base,
  properties: { ...base.properties, isActive: { type: 'boolean' } },
} as const;
const execBase = listQuery(EXECUTION_SORTS, 'createdAt');
const executionsQuery = {
  ...execBase,
  properties: { ...execBase.properties, status: { type: 'string', enum: EXECUTION_STATUSES } },
} as const;

type ScopeP = { accountSid: string; environmentSid: string; bucketSid: string };
type OneP = ScopeP & { workflowSid: string };
type Body = Omit<WorkflowInput, 'trigger'> & {
  trigger: WorkflowTrigger & { schedule?: string | null; timezone?: string };
};

const upper = (o: unknown): void => {
  const v = o as { method?: unknown } | null;
  if (v && typeof v === 'object' && typeof v.method === 'string') v.method = v.method.toUpperCase();
};

/** HTTP methods in conditions and webhook configs are case-insensitive: upper-case before validation. */
const upperCaseMethods: preValidationAsyncHookHandler = async (req) => {
  const body = req.body as { trigger?: { conditions?: unknown }; actions?: unknown } | null;
  if (!body || typeof body !== 'object') return;
  if (body.trigger && typeof body.trigger === 'object' && Array.isArray(body.trigger.conditions))
    body.trigger.conditions.forEach(upper);
  if (Array.isArray(body.actions))
    for (const a of body.actions as { type?: unknown; config?: unknown }[])
      if (a && typeof a === 'object' && a.type === 'webhook') upper(a.config);
};

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };
/** The longest threshold window: what the per-minute aggregates keep by default. */
const MAX_WINDOW_SECONDS = 30 * 86_400;

function cronProblem(cron: string): string | null {
  let valid = false;
  try {
    valid = isValidCron(cron);
  } catch {
    valid = false;
  }
  if (valid) return null;
  const why = explainCron(cron).errors[0]?.message;
  return `is not a valid cron expression${why ? `: ${why}` : ''}`;
}

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** Checks beyond the schema (cron, time zone, window length) and the stored normal form. */
function normalise(body: Body): WorkflowInput {
  const t = body.trigger;
  const details: Record<string, string> = {};
  if (t.type === 'schedule') {
    const problem = cronProblem(t.schedule ?? '');
    if (problem) details['body.trigger.schedule'] = problem;
    if (t.timezone !== undefined && !isTimeZone(t.timezone))
      details['body.trigger.timezone'] = 'is not a known IANA time zone';
  }
  if (t.type === 'threshold')
    (t.conditions ?? []).forEach((c, i) => {
      const m = /^(\d+)([smhd])$/.exec(String(c.timeWindow));
      if (m && Number(m[1]) * UNIT_SECONDS[m[2]!]! > MAX_WINDOW_SECONDS)
        details[`body.trigger.conditions.${i}.timeWindow`] = 'must be at most 30 days';
    });
  if (Object.keys(details).length) throw validation('Request body is invalid', details);

  const trigger: WorkflowTrigger = {
    type: t.type,
    conditions: t.conditions ?? [],
    ...(t.type === 'schedule' ? { schedule: t.schedule! } : {}),
    ...(t.type === 'schedule' && t.timezone !== undefined ? { timezone: t.timezone } : {}),
  };
  const actions: WorkflowAction[] = body.actions.map((a) => ({
    type: a.type,
    // Defaults inside oneOf branches are not applied by ajv, so the webhook method default is here.
    config: a.type === 'webhook' ? { method: 'POST', ...a.config } : a.config,
    order: a.order ?? 0,
  }));
  return { name: body.name, description: body.description ?? '', trigger, actions, isActive: body.isActive };
}

export default async function workflowsRoutes(app: FastifyInstance): Promise<void> {
  const bodyAjv = workflowAjv(false);
  const partAjv = workflowAjv(true);
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? bodyAjv : partAjv).compile(schema as object),
  );

  const repo = new WorkflowsRepository(app.deps.pg);
  const buckets = new BucketsRepository(app.deps.pg);
  const tags = ['workflows'];
  const path = '/v1/accounts/:accountSid/environments/:environmentSid/buckets/:bucketSid/workflows';

  /** A malformed environment sid or another account's bucket is a 404 like any unknown resource. */
  const scopeOf = async (p: ScopeP): Promise<WorkflowScope> => {
    if (!ENVIRONMENT_SID.test(p.environmentSid)) throw notFound('Environment');
    await buckets.get(p.accountSid, p.bucketSid);
    return { accountSid: p.accountSid, environmentSid: p.environmentSid, bucketSid: p.bucketSid };
  };

  app.get<{
    Params: { accountSid: string };
    Querystring: ListQuery & { bucketSid?: string; environmentSid?: string; isActive?: boolean };
  }>(
    '/v1/accounts/:accountSid/workflows',
    {
      preHandler: requireScope('workflows:read'),
      schema: {
        tags,
        summary: 'List the workflows of an account',
        params: accountParams,
        querystring: accountListQuery,
        response: { 200: { $ref: 'workflowList#' } },
      },
    },
    async (req) => {
      const { bucketSid, environmentSid: env, isActive } = req.query;
      return repo.list(req.params.accountSid, { bucketSid, environmentSid: env, isActive }, req.query);
    },
  );

  app.get<{ Params: ScopeP; Querystring: ListQuery & { isActive?: boolean } }>(
    path,
    {
      preHandler: requireScope('workflows:read'),
      schema: {
        tags,
        summary: 'List the workflows of a bucket in an environment',
        params: scopeParams,
        querystring: scopedListQuery,
        response: { 200: { $ref: 'workflowList#' } },
      },
    },
    async (req) => {
      const s = await scopeOf(req.params);
      return repo.list(
        s.accountSid,
        { bucketSid: s.bucketSid, environmentSid: s.environmentSid, isActive: req.query.isActive },
        req.query,
      );
    },
  );

  app.post<{ Params: ScopeP; Body: Body }>(
    path,
    {
      preValidation: upperCaseMethods,
      preHandler: requireScope('workflows:write'),
      schema: {
        tags,
        summary: 'Create a workflow',
        params: scopeParams,
        body: { $ref: 'workflowCreate#' },
        response: { 201: { $ref: 'workflow#' } },
      },
    },
    async (req, reply) => {
      const s = await scopeOf(req.params);
      return reply.status(201).send(await repo.create(s, normalise(req.body)));
    },
  );

  app.get<{ Params: OneP }>(
    `${path}/:workflowSid`,
    {
      preHandler: requireScope('workflows:read'),
      schema: {
        tags,
        summary: 'Get a workflow',
        params: oneParams,
        response: { 200: { $ref: 'workflow#' } },
      },
    },
    async (req) => repo.get(await scopeOf(req.params), req.params.workflowSid),
  );

  app.put<{ Params: OneP; Body: Body }>(
    `${path}/:workflowSid`,
    {
      preValidation: upperCaseMethods,
      preHandler: requireScope('workflows:write'),
      schema: {
        tags,
        summary: 'Replace a workflow',
        description:
          'Full replace of name, description (omitted = empty), trigger, actions and isActive. ' +
          'The environment and bucket of a workflow do not change.',
        params: oneParams,
        body: { $ref: 'workflowUpdate#' },
        response: { 200: { $ref: 'workflow#' } },
      },
    },
    async (req) => repo.update(await scopeOf(req.params), req.params.workflowSid, normalise(req.body)),
  );

  app.delete<{ Params: OneP }>(
    `${path}/:workflowSid`,
    {
      preHandler: requireScope('workflows:delete'),
      schema: {
        tags,
        summary: 'Delete a workflow and its execution log',
        params: oneParams,
        response: { 200: { $ref: 'deleted#' } },
      },
    },
    async (req) => {
      await repo.delete(await scopeOf(req.params), req.params.workflowSid);
      return { sid: req.params.workflowSid, deleted: true };
    },
  );

  app.get<{ Params: OneP; Querystring: ListQuery & { status?: string } }>(
    `${path}/:workflowSid/executions`,
    {
      preHandler: requireScope('workflows:read'),
      schema: {
        tags,
        summary: 'List the executions of a workflow, newest first',
        params: oneParams,
        querystring: executionsQuery,
        response: { 200: { $ref: 'workflowExecutionList#' } },
      },
    },
    async (req) => {
      const wf = await repo.get(await scopeOf(req.params), req.params.workflowSid);
      return repo.executions(wf.accountSid, wf.sid, req.query, req.query.status);
    },
  );
}
