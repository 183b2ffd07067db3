import type { FastifyInstance } from 'fastify';
import { accountParams } from '../../../schemas/common.schema.js';
import {
  SENSITIVE_REDACTION_ONLY,
  FIELD_REDACTION_ONLY,
  type SensitiveRedactionCreate,
  type SensitiveRedactionUpdate,
} from '../../../schemas/rules.schema.js';
import { AppError, validation } from '../../shared/errors.js';
import { parseFieldPath } from '../../shared/rules.js';
import {
  PREDEFINED_TYPES,
  SensitivePatternError,
  SensitiveRuleError,
  isPredefinedType,
  validateSensitiveRule,
} from '../../processor/sensitive/index.js';
import { requireScope } from '../plugins/auth.plugin.js';
import type { RuleListQuery } from '../exclusions.repository.js';
import { RedactionsRepository, type RedactionInput } from '../redactions.repository.js';
import { assertSameShape, bodyShape, ruleListQuery, shapeValidatorCompiler } from './exclusions.route.js';
import { registerRedactionTypesRoute } from './redaction-types.route.js';

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

/**
 * What the schema cannot say about a sensitive-data rule: a predefined type takes no pattern, and
 * `applyTo` null or `value` (its detector scans values: that is what `value` says; the two mean
 * the same for it and are stored as sent). `key` is refused for it: `key` means a pattern searched
 * in field names, which only a custom type has (a predefined type that also reads field names,
 * `authorization` and `password`, decides by itself which names). Any other type is a custom one
 * and needs pattern and applyTo (without either, it is an unknown predefined type: the 400 lists
 * the valid ones); the engine must compile the rule (an RE2 pattern it cannot compile is a 400
 * naming the pattern and the position).
 */
function checkSensitiveRedaction(body: SensitiveRedactionCreate | SensitiveRedactionUpdate): void {
  const { type } = body;
  const pattern = body.pattern ?? null;
  const applyTo = body.applyTo ?? null;
  if (isPredefinedType(type)) {
    const details: Record<string, string> = {};
    if (pattern !== null)
      details['body.pattern'] = `must be null: the predefined type ${type} has its own detector`;
    if (applyTo === 'key')
      details['body.applyTo'] =
        `must be value or null: the predefined type ${type} scans values with its own detector; key is for custom types (a pattern searched in field names)`;
    if (Object.keys(details).length)
      throw validation('A predefined type takes no pattern, and applyTo value or null', details);
  } else if (pattern === null && applyTo === null) {
    throw new AppError(
      400,
      'VALIDATION_ERROR',
      `Unknown predefined type ${JSON.stringify(type)}; predefined types: ${PREDEFINED_TYPES.join(', ')}`,
      {
        'body.type': `is not a predefined type (${PREDEFINED_TYPES.join(', ')}); a custom type needs pattern and applyTo`,
        validTypes: [...PREDEFINED_TYPES],
      },
    );
  }
  try {
    validateSensitiveRule({
      sid: 'new',
      type,
      pattern,
      applyTo,
      level: body.level,
      scopes: body.scopes ?? null,
      environments: body.environments ?? null,
    });
  } catch (err) {
    if (err instanceof SensitivePatternError)
      // The message names the pattern; `position` is where in it RE2 stopped.
      throw new AppError(400, 'VALIDATION_ERROR', err.message, {
        'body.pattern': err.message,
        position: err.position,
        reason: err.reason,
      });
    if (err instanceof SensitiveRuleError)
      throw new AppError(400, 'VALIDATION_ERROR', err.message, { [`body.${err.field}`]: err.message });
    throw err;
  }
}

const FIELDS = { A: SENSITIVE_REDACTION_ONLY, B: FIELD_REDACTION_ONLY };

export default async function redactionsRoutes(app: FastifyInstance): Promise<void> {
  const repo = new RedactionsRepository(app.deps.pg);
  const tags = ['redactions'];
  const shapes = {
    what: 'a redaction',
    contentOnly: SENSITIVE_REDACTION_ONLY,
    pathOnly: FIELD_REDACTION_ONLY,
  };

  // Static `/redactions/types` is matched before `/redactions/:redactionSid`.
  registerRedactionTypesRoute(app);

  app.get<{ Params: { accountSid: string }; Querystring: RuleListQuery }>(
    '/v1/accounts/:accountSid/redactions',
    {
      preHandler: requireScope('redactions:read'),
      schema: {
        tags,
        summary: 'List redaction rules',
        description:
          'Field and sensitive-data redactions, each in the shape it was created in (docs/rules.md). ' +
          'Soft-deleted sensitive-data redactions are left out unless `includeDeleted=true` (or `deleted=true`: only them).',
        params: accountParams,
        querystring: ruleListQuery(),
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
        description:
          'In the shape it was created in; a soft-deleted sensitive-data redaction is returned with its ' +
          '`deletedAt`.',
        params: oneParams,
        response: { 200: { $ref: 'redactionAny#' } },
      },
    },
    async (req) => repo.get(req.params.accountSid, req.params.redactionSid),
  );

  app.post<{ Params: { accountSid: string }; Body: RedactionInput | SensitiveRedactionCreate }>(
    '/v1/accounts/:accountSid/redactions',
    {
      preHandler: requireScope('redactions:write'),
      validatorCompiler: shapeValidatorCompiler({
        ...shapes,
        contentSchema: 'redactionCreateA',
        pathSchema: 'redactionCreate',
      }),
      schema: {
        tags,
        summary: 'Create a redaction rule',
        description:
          'A field redaction (`name`, `fieldPath`, `redactionType`, …) or a sensitive-data redaction ' +
          '(`type`, `level`, `scopes`, ' +
          '`pattern`, `applyTo`, `enabled`), told apart by their fields; a body mixing both is a 400. ' +
          'An unknown predefined type is a 400 listing the valid ones (`details.validTypes`); a custom ' +
          'pattern RE2 cannot compile is a 400 naming it.',
        params: accountParams,
        body: { $ref: 'redactionCreateAny#' },
        response: { 201: { $ref: 'redactionAny#' } },
      },
    },
    async (req, reply) => {
      const { accountSid } = req.params;
      if (bodyShape(req.body, SENSITIVE_REDACTION_ONLY) === 'A') {
        const body = req.body as SensitiveRedactionCreate;
        checkSensitiveRedaction(body);
        return reply.status(201).send(await repo.createSensitive(accountSid, body));
      }
      const body = req.body as RedactionInput;
      checkRedaction(body);
      return reply.status(201).send(await repo.create(accountSid, body));
    },
  );

  app.put<{ Params: P; Body: RedactionInput | SensitiveRedactionUpdate }>(
    '/v1/accounts/:accountSid/redactions/:redactionSid',
    {
      preHandler: requireScope('redactions:write'),
      validatorCompiler: shapeValidatorCompiler({
        ...shapes,
        contentSchema: 'redactionUpdateA',
        pathSchema: 'redactionUpdate',
      }),
      schema: {
        tags,
        summary: 'Replace a redaction rule',
        description:
          'Full replace in the shape the rule has (a body of the other shape is a 400). Field redaction: ' +
          'omitted description becomes empty, omitted replacementValue null. Sensitive-data redaction: ' +
          'omitted description, ' +
          'pattern and applyTo become null, omitted scopes `["*"]`; a soft-deleted rule is not found. ' +
          'Omitted redactAt/buckets/environments keep their value.',
        params: oneParams,
        body: { $ref: 'redactionUpdateAny#' },
        response: { 200: { $ref: 'redactionAny#' } },
      },
    },
    async (req) => {
      const { accountSid, redactionSid } = req.params;
      const given = bodyShape(req.body, SENSITIVE_REDACTION_ONLY);
      assertSameShape('Redaction', redactionSid, await repo.shapeOf(accountSid, redactionSid), given, FIELDS);
      if (given === 'A') {
        const body = req.body as SensitiveRedactionUpdate;
        checkSensitiveRedaction(body);
        return repo.updateSensitive(accountSid, redactionSid, body);
      }
      const body = req.body as RedactionInput;
      checkRedaction(body);
      return repo.update(accountSid, redactionSid, body);
    },
  );

  app.delete<{ Params: P }>(
    '/v1/accounts/:accountSid/redactions/:redactionSid',
    {
      preHandler: requireScope('redactions:delete'),
      schema: {
        tags,
        summary: 'Delete a redaction rule',
        description:
          'A field redaction is removed. A sensitive-data redaction is soft-deleted: `deletedAt` is set, ' +
          'it is no longer ' +
          'applied (nor served to SDKs), and it is listed only with `includeDeleted=true`.',
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
