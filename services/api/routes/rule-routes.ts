import type { FastifyInstance, FastifySchemaCompiler, preValidationAsyncHookHandler } from 'fastify';
import { accountParams, listQuery } from '../../../schemas/common.schema.js';
import {
  CRITERIA_EXCLUSION_ONLY,
  FIELD_REDACTION_ONLY,
  PATH_EXCLUSION_ONLY,
  SENSITIVE_REDACTION_ONLY,
} from '../../../schemas/rules.schema.js';
import { AppError, notFound, validation } from '../../shared/errors.js';
import { createAjv, validator } from '../../shared/schemas.js';
import { requireScope } from '../plugins/auth.plugin.js';
import { RULE_LIST_FILTERS, RULE_SORTS, type RuleListQuery, type RuleShape } from '../rules/rule-table.js';

/**
 * The two rule kinds (docs/rules.md) and the fields only one of their shapes has: content rules
 * (shape `A`: criteria exclusions, sensitive-data redactions) and path rules (shape `B`: path
 * exclusions, field redactions).
 */
export const RULE_SHAPES = {
  exclusion: { what: 'an exclusion', contentOnly: CRITERIA_EXCLUSION_ONLY, pathOnly: PATH_EXCLUSION_ONLY },
  redaction: { what: 'a redaction', contentOnly: SENSITIVE_REDACTION_ONLY, pathOnly: FIELD_REDACTION_ONLY },
} as const;

type RuleKind = keyof typeof RULE_SHAPES;

/**
 * Methods are case-insensitive on input; upper-casing before validation lets the enum stay simple.
 * `inside` names the property of the body that holds the rule (previews: `rule`).
 */
export function upperCaseMethod(inside?: string): preValidationAsyncHookHandler {
  return async (req) => {
    const body = req.body as Record<string, unknown> | null | undefined;
    const rule = (inside ? body?.[inside] : body) as { method?: unknown } | null | undefined;
    if (rule && typeof rule === 'object' && typeof rule.method === 'string')
      rule.method = rule.method.toUpperCase();
  };
}

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
 * The shape a rule body is written in: a content rule (shape A) when it has a field only content
 * rules have (`criteria`; for redactions `type`, `level`, `scopes`, …), otherwise a path rule
 * (shape B; a body with neither is read as a path rule, whose errors then name its required
 * fields).
 */
export function bodyShape(body: unknown, kind: RuleKind): RuleShape {
  return present(body, RULE_SHAPES[kind].contentOnly).length ? 'A' : 'B';
}

/**
 * A route validator compiler for rule bodies of either shape: a body mixing both shapes is a 400
 * naming every field of each; otherwise the body is validated against its shape's schema (the
 * errors are those of that shape alone, not of an `anyOf`). Params and query strings are validated
 * as everywhere else (coerced). The route's `schema.body` documents both shapes in OpenAPI.
 */
export function shapeValidatorCompiler(opts: {
  kind: RuleKind;
  contentSchema: string;
  pathSchema: string;
  /** the property of the body that holds the rule (previews: `rule`); the body itself when absent */
  inside?: string;
}): FastifySchemaCompiler<unknown> {
  const { what, contentOnly, pathOnly } = RULE_SHAPES[opts.kind];
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
      const contentFields = present(rule, contentOnly);
      const pathFields = present(rule, pathOnly);
      if (contentFields.length && pathFields.length) {
        const details: Record<string, string> = {};
        for (const f of contentFields) details[`${at}.${f}`] = 'is a Shape A field';
        for (const f of pathFields) details[`${at}.${f}`] = 'is a Shape B field';
        return {
          error: validation(
            `The body mixes Shape A fields (${contentFields.join(', ')}) and Shape B fields (${pathFields.join(', ')}) of ${what}: send the fields of one shape`,
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
function assertSameShape(
  kind: RuleKind,
  sid: string,
  current: { shape: RuleShape; deleted: boolean } | undefined,
  given: RuleShape,
): void {
  const what = kind === 'exclusion' ? 'Exclusion' : 'Redaction';
  if (!current || current.deleted) throw notFound(what);
  if (current.shape === given) return;
  const { contentOnly, pathOnly } = RULE_SHAPES[kind];
  const fields = current.shape === 'A' ? contentOnly : pathOnly;
  const details: Record<string, string> = {};
  for (const f of fields) details[`body.${f}`] = `is a field of this Shape ${current.shape} rule`;
  throw new AppError(
    400,
    'VALIDATION_ERROR',
    `${what} ${sid} is a Shape ${current.shape} rule: replace it with its Shape ${current.shape} fields (${fields.join(', ')})`,
    details,
  );
}

/** The stored rules of one kind, as far as the shared routes read and delete them. */
interface RuleRows {
  list(accountSid: string, q: RuleListQuery): Promise<unknown>;
  get(accountSid: string, sid: string): Promise<unknown>;
  shapeOf(accountSid: string, sid: string): Promise<{ shape: RuleShape; deleted: boolean } | undefined>;
  delete(accountSid: string, sid: string): Promise<void>;
}

/**
 * The five routes of one rule kind under `/v1/accounts/:accountSid/{exclusions|redactions}`: list,
 * get, create, replace and delete, with the kind's scopes, schemas and OpenAPI texts. Both shapes
 * share them; `create` and `replace` get the body with its shape told (`replace` after the rule's
 * own shape is checked) and check and store what only their kind knows.
 */
export function registerRuleRoutes<Body>(
  app: FastifyInstance,
  spec: {
    kind: RuleKind;
    rows: RuleRows;
    /** an upper-casing of the method before validation (exclusions) */
    preValidation?: preValidationAsyncHookHandler;
    describe: { list: string; get: string; create: string; replace: string; delete: string };
    create(accountSid: string, body: Body, shape: RuleShape): Promise<unknown>;
    replace(accountSid: string, sid: string, body: Body, shape: RuleShape): Promise<unknown>;
  },
): void {
  const { kind, rows, describe } = spec;
  const collection = `/v1/accounts/:accountSid/${kind}s`;
  const param = `${kind}Sid`;
  const one = `${collection}/:${param}`;
  const oneParams = {
    type: 'object',
    required: ['accountSid', param],
    properties: { accountSid: { type: 'string' }, [param]: { type: 'string' } },
  } as const;
  const tags = [`${kind}s`];
  const { what } = RULE_SHAPES[kind];
  type One = { Params: { accountSid: string; [sid: string]: string } };
  const sidOf = (req: { params: Record<string, string> }) => req.params[param] ?? '';

  app.get<{ Params: { accountSid: string }; Querystring: RuleListQuery }>(
    collection,
    {
      preHandler: requireScope(`${kind}s:read`),
      schema: {
        tags,
        summary: `List ${kind} rules`,
        description: describe.list,
        params: accountParams,
        querystring: ruleListQuery(),
        response: { 200: { $ref: `${kind}List#` } },
      },
    },
    async (req) => rows.list(req.params.accountSid, req.query),
  );

  app.get<One>(
    one,
    {
      preHandler: requireScope(`${kind}s:read`),
      schema: {
        tags,
        summary: `Get ${what} rule`,
        description: describe.get,
        params: oneParams,
        response: { 200: { $ref: `${kind}Any#` } },
      },
    },
    async (req) => rows.get(req.params.accountSid, sidOf(req)),
  );

  app.post<{ Params: { accountSid: string }; Body: Body }>(
    collection,
    {
      ...(spec.preValidation ? { preValidation: spec.preValidation } : {}),
      preHandler: requireScope(`${kind}s:write`),
      validatorCompiler: shapeValidatorCompiler({
        kind,
        contentSchema: `${kind}CreateA`,
        pathSchema: `${kind}Create`,
      }),
      schema: {
        tags,
        summary: `Create ${what} rule`,
        description: describe.create,
        params: accountParams,
        body: { $ref: `${kind}CreateAny#` },
        response: { 201: { $ref: `${kind}Any#` } },
      },
    },
    async (req, reply) =>
      reply
        .status(201)
        .send(await spec.create(req.params.accountSid, req.body as Body, bodyShape(req.body, kind))),
  );

  app.put<One & { Body: Body }>(
    one,
    {
      ...(spec.preValidation ? { preValidation: spec.preValidation } : {}),
      preHandler: requireScope(`${kind}s:write`),
      validatorCompiler: shapeValidatorCompiler({
        kind,
        contentSchema: `${kind}UpdateA`,
        pathSchema: `${kind}Update`,
      }),
      schema: {
        tags,
        summary: `Replace ${what} rule`,
        description: describe.replace,
        params: oneParams,
        body: { $ref: `${kind}UpdateAny#` },
        response: { 200: { $ref: `${kind}Any#` } },
      },
    },
    async (req) => {
      const { accountSid } = req.params;
      const sid = sidOf(req);
      const given = bodyShape(req.body, kind);
      assertSameShape(kind, sid, await rows.shapeOf(accountSid, sid), given);
      return spec.replace(accountSid, sid, req.body as Body, given);
    },
  );

  app.delete<One>(
    one,
    {
      preHandler: requireScope(`${kind}s:delete`),
      schema: {
        tags,
        summary: `Delete ${what} rule`,
        description: describe.delete,
        params: oneParams,
        response: { 200: { $ref: 'deleted#' } },
      },
    },
    async (req) => {
      const sid = sidOf(req);
      await rows.delete(req.params.accountSid, sid);
      return { sid, deleted: true };
    },
  );
}
