import { createRequire } from 'node:module';
import { Ajv } from 'ajv';
import type { FastifyInstance, preHandlerAsyncHookHandler } from 'fastify';
import { accountParams, environmentSid, listQuery } from '../../../schemas/common.schema.js';
import type { FromSchema } from 'json-schema-to-ts';
import { ALL_SCHEMAS, ref, type Reply } from '../../../schemas/index.js';
import {
  ACTION_TYPES,
  EXECUTION_STATUSES,
  TRIGGER_TYPES,
  type workflowExecutionSchema,
  type workflowPreviewSchema,
} from '../../../schemas/workflow.schema.js';
import { AppError, notFound, validation } from '../../shared/errors.js';
import { ENVIRONMENT_SID } from '../../shared/ids.js';
import { secretBox } from '../../shared/secret-box.js';
import { maskWorkflowPayload, unmaskActions } from '../../actions/action-secrets.js';
import { requireScope } from '../plugins/auth.plugin.js';
import { WorkflowTools } from '../workflows/workflow-tools.service.js';
import { normalise, upperCaseMethods } from '../workflows/workflow-body.js';
import { BucketsRepository } from '../buckets/buckets.repository.js';
import type { SchemaTypes } from '../api.types.js';
import {
  EXECUTION_SORTS,
  WORKFLOW_SORTS,
  WorkflowsRepository,
  type WorkflowScope,
  type WorkflowTrigger,
} from '../workflows/workflows.repository.js';

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
  properties: {
    ...execBase.properties,
    status: { type: 'string', enum: EXECUTION_STATUSES },
    triggerType: { type: 'string', enum: TRIGGER_TYPES },
    requestSid: str,
    deadLettered: {
      type: 'boolean',
      description: 'true: only dead-lettered executions; false: none of them',
    },
    detail: {
      type: 'boolean',
      default: false,
      description: 'true: each execution also carries `trigger`, `deadLettered` and per-action `actions`',
    },
  },
} as const;
const executionParams = {
  type: 'object',
  required: ['accountSid', 'environmentSid', 'bucketSid', 'workflowSid', 'executionSid'],
  properties: { accountSid: str, environmentSid: str, bucketSid: str, workflowSid: str, executionSid: str },
} as const;

/**
 * Action types that send data out of Tapline. Every one can carry captured request data (headers,
 * bodies through templates or the default webhook body) to an address the writer chooses.
 */
const OUTBOUND_ACTIONS: ReadonlySet<string> = new Set(ACTION_TYPES);

/**
 * A workflow with outbound actions exports captured requests, so writing one (or test-sending or
 * re-running it) also needs `requests:read`: a token that may not read requests may not mail
 * them out either (docs/workflows-api.md "Scopes"). Runs after the route's own scope check.
 */
function requireRequestsReadFor(
  actions: readonly { type?: unknown }[] | undefined,
): preHandlerAsyncHookHandler {
  return async (req) => {
    const list = actions ?? (req.body as { actions?: { type?: unknown }[] } | null)?.actions ?? [];
    const outbound = list.some((a) => OUTBOUND_ACTIONS.has(String(a?.type)));
    if (outbound && !req.principal.scopes.has('requests:read'))
      throw new AppError(
        403,
        'FORBIDDEN',
        'Token lacks the scope requests:read: workflows with outbound actions (webhook, email, chat, ' +
          'automation, slack, teams, pagerduty, opsgenie) send captured request data out, so writing, ' +
          'testing or re-running one needs it',
        { requiredScope: 'requests:read' },
      );
  };
}
/** For routes that always send out (test, re-run): every action type is outbound. */
const requireRequestsRead = requireRequestsReadFor([{ type: 'webhook' }]);
/** For create/update: only when the body's actions are outbound. */
const requireRequestsReadForBody = requireRequestsReadFor(undefined);

type ScopeP = FromSchema<typeof scopeParams>;

/**
 * NOTE: the workflow tools' views (workflow-tools.service.ts: an execution's per-action `status`,
 * the preview's `rendered`) are typed more loosely than their reply schemas, which the values
 * meet; these three replies are asserted to the schema's type. When those views are the
 * schemas' types (`WorkflowExecution`, `WorkflowPreview`), the assertions go.
 */
type ExecutionReply = Reply<typeof workflowExecutionSchema>;

export default async function workflowsRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const bodyAjv = workflowAjv(false);
  const partAjv = workflowAjv(true);
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? bodyAjv : partAjv).compile(schema as object),
  );

  const repo = new WorkflowsRepository(app.deps.pg, secretBox(app.deps.cfg));
  // Action secrets (URLs, header values, credential-named body and data values) are masked in
  // every answer (docs/security.md).
  app.addHook('preSerialization', async (_req, _reply, payload) => maskWorkflowPayload(payload));
  const tools = new WorkflowTools(app.deps.pg, app.deps.ch, app.deps.cfg, app.deps.producer);
  const buckets = new BucketsRepository(app.deps.pg);
  const tags = ['workflows'];
  const path = '/v1/accounts/:accountSid/environments/:environmentSid/buckets/:bucketSid/workflows';

  /** A malformed environment sid or another account's bucket is a 404 like any unknown resource. */
  const scopeOf = async (p: ScopeP): Promise<WorkflowScope> => {
    if (!ENVIRONMENT_SID.test(p.environmentSid)) throw notFound('Environment');
    await buckets.get(p.accountSid, p.bucketSid);
    return { accountSid: p.accountSid, environmentSid: p.environmentSid, bucketSid: p.bucketSid };
  };

  /** A slo_burn trigger names an SLO of the workflow's account: otherwise a 400 naming the field. */
  const checkSlo = async (s: WorkflowScope, trigger: WorkflowTrigger): Promise<void> => {
    if (trigger.type !== 'slo_burn') return;
    const found = await app.deps.pg.query('SELECT 1 FROM slos WHERE account_sid = $1 AND sid = $2', [
      s.accountSid,
      trigger.sloSid,
    ]);
    if (!found.rowCount)
      throw validation('Request body is invalid', {
        'body.trigger.sloSid': 'is not an SLO of this account',
      });
  };

  app.get(
    '/v1/accounts/:accountSid/workflows',
    {
      preHandler: requireScope('workflows:read'),
      schema: {
        tags,
        summary: 'List the workflows of an account',
        params: accountParams,
        querystring: accountListQuery,
        response: { 200: ref('workflowList') },
      },
    },
    async (req) => {
      const { bucketSid, environmentSid: env, isActive } = req.query;
      return repo.list(req.params.accountSid, { bucketSid, environmentSid: env, isActive }, req.query);
    },
  );

  app.get(
    path,
    {
      preHandler: requireScope('workflows:read'),
      schema: {
        tags,
        summary: 'List the workflows of a bucket in an environment',
        params: scopeParams,
        querystring: scopedListQuery,
        response: { 200: ref('workflowList') },
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

  app.post(
    path,
    {
      preValidation: upperCaseMethods,
      preHandler: [requireScope('workflows:write'), requireRequestsReadForBody],
      schema: {
        tags,
        summary: 'Create a workflow',
        description:
          'Needs `requests:read` too when an action is outbound (every action type: webhook, email, chat, automation, slack, teams, pagerduty, opsgenie).',
        params: scopeParams,
        body: ref('workflowCreate'),
        response: { 201: ref('workflow') },
      },
    },
    async (req, reply) => {
      const s = await scopeOf(req.params);
      const input = normalise(req.body);
      await checkSlo(s, input.trigger);
      return reply.status(201).send(await repo.create(s, input));
    },
  );

  app.get(
    `${path}/:workflowSid`,
    {
      preHandler: requireScope('workflows:read'),
      schema: {
        tags,
        summary: 'Get a workflow',
        params: oneParams,
        response: { 200: ref('workflow') },
      },
    },
    async (req) => repo.get(await scopeOf(req.params), req.params.workflowSid),
  );

  app.put(
    `${path}/:workflowSid`,
    {
      preValidation: upperCaseMethods,
      preHandler: [requireScope('workflows:write'), requireRequestsReadForBody],
      schema: {
        tags,
        summary: 'Replace a workflow',
        description:
          'Full replace of name, description (omitted = empty), trigger, actions and isActive. ' +
          'The environment and bucket of a workflow do not change. Needs `requests:read` too when ' +
          'an action is outbound (every action type: webhook, email, chat, automation, slack, teams, pagerduty, opsgenie). A masked secret (`****`) sent ' +
          "back keeps the stored value while the action's URL keeps its origin (scheme, host, " +
          'port); with another origin it is a 400 naming it: send the value again.',
        params: oneParams,
        body: ref('workflowUpdate'),
        response: { 200: ref('workflow') },
      },
    },
    async (req) => {
      const s = await scopeOf(req.params);
      const input = normalise(req.body);
      await checkSlo(s, input.trigger);
      return repo.update(s, req.params.workflowSid, input);
    },
  );

  app.delete(
    `${path}/:workflowSid`,
    {
      preHandler: requireScope('workflows:delete'),
      schema: {
        tags,
        summary: 'Delete a workflow and its execution log',
        params: oneParams,
        response: { 200: ref('deleted') },
      },
    },
    async (req) => {
      await repo.delete(await scopeOf(req.params), req.params.workflowSid);
      return { sid: req.params.workflowSid, deleted: true };
    },
  );

  app.get(
    `${path}/:workflowSid/executions`,
    {
      preHandler: requireScope('workflows:read'),
      schema: {
        tags,
        summary: 'List the executions of a workflow, newest first',
        params: oneParams,
        querystring: executionsQuery,
        response: { 200: ref('workflowExecutionList') },
      },
    },
    async (req) => {
      const wf = await repo.get(await scopeOf(req.params), req.params.workflowSid);
      const { status, triggerType, requestSid, deadLettered, detail } = req.query;
      const page = await tools.executions(
        wf.accountSid,
        wf.sid,
        req.query,
        { status, triggerType, requestSid, deadLettered },
        detail === true,
      );
      return page as { hasMore: boolean; records: ExecutionReply[] };
    },
  );

  app.post(
    `${path}/:workflowSid/executions/:executionSid/retry`,
    {
      preHandler: [requireScope('workflows:write'), requireRequestsRead],
      schema: {
        tags,
        summary: 'Re-run a failed (dead-lettered) execution',
        description:
          'Puts the execution back to `pending` (attempts restart at 0; actions that succeeded are ' +
          'not sent again) and queues it on `workflow.actions` with the same execution sid, rebuilt ' +
          'from the stored request it ran for. The action runner then runs it with its usual ' +
          'retries and dead letter. 409 unless the execution is `failed`, or when its request is ' +
          'no longer stored. Needs `requests:read` too.',
        params: executionParams,
        response: { 202: ref('workflowExecution') },
      },
    },
    async (req, reply) => {
      const wf = await repo.get(await scopeOf(req.params), req.params.workflowSid);
      const execution = await tools.retry(wf, req.params.executionSid);
      return reply.status(202).send(execution as ExecutionReply);
    },
  );

  app.post(
    `${path}/:workflowSid/test`,
    {
      preValidation: upperCaseMethods,
      preHandler: [requireScope('workflows:write'), requireRequestsRead],
      schema: {
        tags,
        summary: 'Send a test: run each action once against a sample',
        description:
          "Runs each action of the workflow (or the body's `actions`) once, without retries, " +
          "through the action runner's executors, template renderer and outbound guard, on a " +
          'sample: the stored request `requestSid`, else the newest stored request of the ' +
          "workflow's environment, else a synthetic one. Answers each action's result. Writes " +
          'nothing to the execution log. Needs `requests:read` too. Masked secrets (`****`) in ' +
          "draft actions keep the stored values as a replace does: 400 when the action's URL " +
          'changes origin (scheme, host, port), nothing sent.',
        params: oneParams,
        body: ref('workflowTestBody'),
        response: { 200: ref('workflowTestResult') },
      },
    },
    async (req) => {
      const wf = await repo.get(await scopeOf(req.params), req.params.workflowSid);
      // Draft actions keep the stored secrets as a save would (a 400 before anything is sent when
      // a masked one would go to another origin).
      const actions = req.body?.actions
        ? unmaskActions(
            req.body.actions.map((a) => ({
              type: a.type,
              config: a.type === 'webhook' ? { method: 'POST', ...a.config } : a.config,
              order: a.order ?? 0,
            })),
            wf.actions,
          )
        : wf.actions;
      return tools.test(wf, actions, req.body?.requestSid);
    },
  );

  app.post(
    `${path}/preview`,
    {
      preHandler: [requireScope('workflows:read'), requireRequestsRead],
      schema: {
        tags,
        summary: 'Render template variables on a sample request',
        description:
          'Every template variable, and the given action configs, rendered by the action ' +
          "runner's template renderer on a sample: the stored request `requestSid`, else the " +
          "newest stored request of the path's environment (an error first for `triggerType: " +
          'error`), else a synthetic one. Sends nothing. Needs `requests:read` too.',
        params: scopeParams,
        body: ref('workflowPreviewBody'),
        response: { 200: ref('workflowPreview') },
      },
    },
    async (req) => {
      const s = await scopeOf(req.params);
      const type = req.body?.triggerType ?? 'request';
      const preview = await tools.preview(
        { ...s, sid: 'wfl_preview', name: '(preview)', trigger: { type, conditions: [] } },
        req.body?.requestSid,
        req.body?.configs ?? [],
      );
      return preview as Reply<typeof workflowPreviewSchema>;
    },
  );
}
