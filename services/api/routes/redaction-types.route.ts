import type { FastifyInstance } from 'fastify';
import { accountParams } from '../../../schemas/common.schema.js';
import { sensitiveCatalogue } from '../../processor/sensitive/index.js';
import { requireScope } from '../plugins/auth.plugin.js';

/**
 * `GET /v1/accounts/{accountSid}/redactions/types`: the catalogue of predefined sensitive-data redaction
 * types (services/processor/sensitive/catalogue.ts) with what each finds, how it is validated, what
 * `partial` keeps and examples of what it matches and does not, plus the valid scopes and levels.
 * Registered by the redaction routes (its path sits under theirs). The catalogue is static: built
 * once.
 */
export function registerRedactionTypesRoute(app: FastifyInstance): void {
  const catalogue = sensitiveCatalogue();
  app.get<{ Params: { accountSid: string } }>(
    '/v1/accounts/:accountSid/redactions/types',
    {
      preHandler: requireScope('redactions:read'),
      schema: {
        tags: ['redactions'],
        summary: 'List the predefined redaction types',
        description:
          'Every predefined type a sensitive-data redaction can name in `type`, with its description, ' +
          'validation, what `partial` keeps and examples; also the valid `scopes` and `level`s (docs/rules.md).',
        params: accountParams,
        response: { 200: { $ref: 'redactionTypes#' } },
      },
    },
    async () => catalogue,
  );
}
