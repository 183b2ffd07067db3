import type { FastifyInstance } from 'fastify';
import type { SensitiveRedactionCreate, SensitiveRedactionUpdate } from '../../../schemas/rules.schema.js';
import { AppError, validation } from '../../shared/errors.js';
import { parseFieldPath } from '../../shared/rules.js';
import {
  PREDEFINED_TYPES,
  SensitivePatternError,
  SensitiveRuleError,
  isPredefinedType,
  validateSensitiveRule,
} from '../../processor/sensitive/index.js';
import { RedactionsRepository, type RedactionInput } from '../rules/redactions.repository.js';
import { registerRuleRoutes } from './rule-routes.js';
import { registerRedactionTypesRoute } from './redaction-types.route.js';

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

/** Redaction rules (docs/rules.md): field redactions and sensitive-data redactions on the same routes. */
export default async function redactionsRoutes(app: FastifyInstance): Promise<void> {
  const repo = new RedactionsRepository(app.deps.pg);

  // Static `/redactions/types` is matched before `/redactions/:redactionSid`.
  registerRedactionTypesRoute(app);

  registerRuleRoutes<RedactionInput | SensitiveRedactionCreate>(app, {
    kind: 'redaction',
    rows: repo,
    describe: {
      list:
        'Field and sensitive-data redactions, each in the shape it was created in (docs/rules.md). ' +
        'Soft-deleted sensitive-data redactions are left out unless `includeDeleted=true` (or ' +
        '`deleted=true`: only them).',
      get:
        'In the shape it was created in; a soft-deleted sensitive-data redaction is returned with its ' +
        '`deletedAt`.',
      create:
        'A field redaction (`name`, `fieldPath`, `redactionType`, …) or a sensitive-data redaction ' +
        '(`type`, `level`, `scopes`, `pattern`, `applyTo`, `enabled`), told apart by their fields; a ' +
        'body mixing both is a 400. An unknown predefined type is a 400 listing the valid ones ' +
        '(`details.validTypes`); a custom pattern RE2 cannot compile is a 400 naming it.',
      replace:
        'Full replace in the shape the rule has (a body of the other shape is a 400). Field redaction: ' +
        'omitted description becomes empty, omitted replacementValue null. Sensitive-data redaction: ' +
        'omitted description, pattern and applyTo become null, omitted scopes `["*"]`; a soft-deleted ' +
        'rule is not found. Omitted redactAt/buckets/environments keep their value.',
      delete:
        'A field redaction is removed. A sensitive-data redaction is soft-deleted: `deletedAt` is set, ' +
        'it is no longer applied (nor served to SDKs), and it is listed only with `includeDeleted=true`.',
    },
    async create(accountSid, body, shape) {
      if (shape === 'A') {
        const sensitive = body as SensitiveRedactionCreate;
        checkSensitiveRedaction(sensitive);
        return repo.createSensitive(accountSid, sensitive);
      }
      const field = body as RedactionInput;
      checkRedaction(field);
      return repo.create(accountSid, field);
    },
    async replace(accountSid, sid, body, shape) {
      if (shape === 'A') {
        const sensitive = body as SensitiveRedactionUpdate;
        checkSensitiveRedaction(sensitive);
        return repo.updateSensitive(accountSid, sid, sensitive);
      }
      const field = body as RedactionInput;
      checkRedaction(field);
      return repo.update(accountSid, sid, field);
    },
  });
}
