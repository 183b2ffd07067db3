import type { FastifyInstance, FastifySchemaCompiler, preValidationAsyncHookHandler } from 'fastify';
import { accountParams, listQuery } from '../../../schemas/common.schema.js';
import {
  CRITERIA_EXCLUSION_ONLY,
  PATH_EXCLUSION_ONLY,
  type CriteriaExclusionCreate,
  type CriteriaExclusionUpdate,
} from '../../../schemas/rules.schema.js';
import { AppError, notFound, validation } from '../../shared/errors.js';
import { createAjv, validator } from '../../shared/schemas.js';
import { compileExclusionCriteria } from '../../processor/exclusion-criteria.js';
import { requireScope } from '../plugins/auth.plugin.js';
import {
  ExclusionsRepository,
  RULE_LIST_FILTERS,
  RULE_SORTS,
  type ExclusionInput,
  type RuleListQuery,
  type RuleShape,
} from '../exclusions.repository.js';

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

/** The list query of both rule lists: pagination plus the soft-delete and shape filters. */
export function ruleListQuery() {
  const base = listQuery(RULE_SORTS, 'createdAt');
  return { ...base, properties: { ...base.properties, ...RULE_LIST_FILTERS } } as const;
}

/** The fields of `body` that only one shape has (a body that is not an object has none). */
function present(body: unknown, fields: readonly string[]): string[] {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return [];
  return fields.filter((f) => Object.hasOwn(body, f));
}

/**
 * The shape a rule body is written in: a content rule (shape A) when it has a field only content rules have
 * (`criteria`; for redactions `type`, `level`, `scopes`, …), otherwise a path rule (shape B; a body with
 * neither is read as a path rule, whose errors then name its required fields).
 */
export function bodyShape(body: unknown, contentOnly: readonly string[]): RuleShape {
  return present(body, contentOnly).length ? 'A' : 'B';
}

/**
 * A route validator compiler for rule bodies of either shape: a body mixing both shapes is a 400
 * naming every field of each; otherwise the body is validated against its shape's schema (the
 * errors are those of that shape alone, not of an `anyOf`). Params and query strings are validated
 * as everywhere else (coerced). The route's `schema.body` documents both shapes in OpenAPI.
 */
export function shapeValidatorCompiler(opts: {
  what: string;
  contentOnly: readonly string[];
  pathOnly: readonly string[];
  contentSchema: string;
  pathSchema: string;
  /** the property of the body that holds the rule (previews: `rule`); the body itself when absent */
  inside?: string;
}): FastifySchemaCompiler<unknown> {
  const coercing = createAjv({ coerceTypes: 'array' });
  return ({ schema, httpPart }) => {
    if (httpPart !== 'body') {
      const id = (schema as { $id?: unknown }).$id;
      return (typeof id === 'string' && coercing.getSchema(id)) || coercing.compile(schema as object);
    }
    const validateContentRule = validator(opts.contentSchema);
    const validatePathRule = validator(opts.pathSchema);
    const at = opts.inside ? `body.${opts.inside}` : 'body';
    return (data: unknown) => {
      const rule = opts.inside ? (data as Record<string, unknown> | null)?.[opts.inside] : data;
      const contentFields = present(rule, opts.contentOnly);
      const pathFields = present(rule, opts.pathOnly);
      if (contentFields.length && pathFields.length) {
        const details: Record<string, string> = {};
        for (const f of contentFields) details[`${at}.${f}`] = 'is a Shape A field';
        for (const f of pathFields) details[`${at}.${f}`] = 'is a Shape B field';
        return {
          error: validation(
            `The body mixes Shape A fields (${contentFields.join(', ')}) and Shape B fields (${pathFields.join(', ')}) of ${opts.what}: send the fields of one shape`,
            details,
          ),
        };
      }
      const fn = contentFields.length ? validateContentRule : validatePathRule;
      if (fn(data)) return { value: data };
      // The error handler turns `validation` into the envelope's details, as for any schema error.
      const error = Object.assign(new Error('Request body is invalid'), {
        validation: fn.errors ?? [],
        validationContext: 'body',
      });
      return { error };
    };
  };
}

/**
 * PUT keeps a rule's shape: a path rule body cannot replace a content rule, nor the reverse. A
 * soft-deleted rule cannot be replaced (404).
 */
export function assertSameShape(
  what: string,
  sid: string,
  current: { shape: RuleShape; deleted: boolean } | undefined,
  given: RuleShape,
  fields: { A: readonly string[]; B: readonly string[] },
): void {
  if (!current || current.deleted) throw notFound(what);
  if (current.shape === given) return;
  const details: Record<string, string> = {};
  for (const f of fields[current.shape])
    details[`body.${f}`] = `is a field of this Shape ${current.shape} rule`;
  throw new AppError(
    400,
    'VALIDATION_ERROR',
    `${what} ${sid} is a Shape ${current.shape} rule: replace it with its Shape ${current.shape} fields (${fields[current.shape].join(', ')})`,
    details,
  );
}

const FIELDS = { A: CRITERIA_EXCLUSION_ONLY, B: PATH_EXCLUSION_ONLY };

export default async function exclusionsRoutes(app: FastifyInstance): Promise<void> {
  const repo = new ExclusionsRepository(app.deps.pg);
  const tags = ['exclusions'];
  const shapes = {
    what: 'an exclusion',
    contentOnly: CRITERIA_EXCLUSION_ONLY,
    pathOnly: PATH_EXCLUSION_ONLY,
  };

  app.get<{ Params: { accountSid: string }; Querystring: RuleListQuery }>(
    '/v1/accounts/:accountSid/exclusions',
    {
      preHandler: requireScope('exclusions:read'),
      schema: {
        tags,
        summary: 'List exclusion rules',
        description:
          'Path and criteria exclusions, each in the shape it was created in (docs/rules.md). Soft-deleted ' +
          'criteria exclusions are left out unless `includeDeleted=true` (or `deleted=true`: only them).',
        params: accountParams,
        querystring: ruleListQuery(),
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
        description:
          'In the shape it was created in; a soft-deleted criteria exclusion is returned with its `deletedAt`.',
        params: oneParams,
        response: { 200: { $ref: 'exclusionAny#' } },
      },
    },
    async (req) => repo.get(req.params.accountSid, req.params.exclusionSid),
  );

  app.post<{ Params: { accountSid: string }; Body: ExclusionInput | CriteriaExclusionCreate }>(
    '/v1/accounts/:accountSid/exclusions',
    {
      preValidation: upperCaseMethod,
      preHandler: requireScope('exclusions:write'),
      validatorCompiler: shapeValidatorCompiler({
        ...shapes,
        contentSchema: 'exclusionCreateA',
        pathSchema: 'exclusionCreate',
      }),
      schema: {
        tags,
        summary: 'Create an exclusion rule',
        description:
          'A path exclusion (`name`, `pathPattern`, `method`, `statusCode`, `isActive`) or a criteria ' +
          'exclusion (`criteria` in the search language, `enabled`), told apart by their fields; a body mixing both is a 400. ' +
          'Criteria that do not parse are a 400 whose details give the `position`.',
        params: accountParams,
        body: { $ref: 'exclusionCreateAny#' },
        response: { 201: { $ref: 'exclusionAny#' } },
      },
    },
    async (req, reply) => {
      const { accountSid } = req.params;
      if (bodyShape(req.body, CRITERIA_EXCLUSION_ONLY) === 'A') {
        const body = req.body as CriteriaExclusionCreate;
        compileExclusionCriteria(body.criteria, 'body.criteria');
        return reply.status(201).send(await repo.createCriteria(accountSid, body));
      }
      return reply.status(201).send(await repo.create(accountSid, req.body as ExclusionInput));
    },
  );

  app.put<{ Params: P; Body: ExclusionInput | CriteriaExclusionUpdate }>(
    '/v1/accounts/:accountSid/exclusions/:exclusionSid',
    {
      preValidation: upperCaseMethod,
      preHandler: requireScope('exclusions:write'),
      validatorCompiler: shapeValidatorCompiler({
        ...shapes,
        contentSchema: 'exclusionUpdateA',
        pathSchema: 'exclusionUpdate',
      }),
      schema: {
        tags,
        summary: 'Replace an exclusion rule',
        description:
          'Full replace in the shape the rule has (a body of the other shape is a 400). Path exclusion: ' +
          'omitted description becomes empty, omitted statusCode null. Criteria exclusion: omitted ' +
          'description becomes null; ' +
          'a soft-deleted rule is not found. Omitted buckets/environments keep their value.',
        params: oneParams,
        body: { $ref: 'exclusionUpdateAny#' },
        response: { 200: { $ref: 'exclusionAny#' } },
      },
    },
    async (req) => {
      const { accountSid, exclusionSid } = req.params;
      const given = bodyShape(req.body, CRITERIA_EXCLUSION_ONLY);
      assertSameShape('Exclusion', exclusionSid, await repo.shapeOf(accountSid, exclusionSid), given, FIELDS);
      if (given === 'A') {
        const body = req.body as CriteriaExclusionUpdate;
        compileExclusionCriteria(body.criteria, 'body.criteria');
        return repo.updateCriteria(accountSid, exclusionSid, body);
      }
      return repo.update(accountSid, exclusionSid, req.body as ExclusionInput);
    },
  );

  app.delete<{ Params: P }>(
    '/v1/accounts/:accountSid/exclusions/:exclusionSid',
    {
      preHandler: requireScope('exclusions:delete'),
      schema: {
        tags,
        summary: 'Delete an exclusion rule',
        description:
          'A path exclusion is removed. A criteria exclusion is soft-deleted: `deletedAt` is set, it is ' +
          'no longer ' +
          'applied, and it is listed only with `includeDeleted=true`.',
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
