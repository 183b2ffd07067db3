import type { FastifyInstance } from 'fastify';
import type { SchemaTypes } from '../api.types.js';
import { ref } from '../../../schemas/index.js';
import { accountParams, listQuery, sidParams } from '../../../schemas/common.schema.js';
import { ALL_SCOPES } from '../../shared/credentials.js';
import { validation } from '../../shared/errors.js';
import { requireScope } from '../plugins/auth.plugin.js';
import { API_TOKEN_SORTS, ApiTokensRepository } from '../tokens/api-tokens.repository.js';
import { cappedExpiry, requireHeld } from '../tokens/token-inheritance.js';
import { rejectPastExpiry, tokenChanges } from './token-changes.js';

const tokenParams = sidParams('accountSid', 'apiTokenSid');

const KNOWN_SCOPES: ReadonlySet<string> = new Set(ALL_SCOPES);

/** API tokens (docs/auth.md). The value is shown once, on create; scopes and value never change. */
export default async function apiTokensRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const repo = new ApiTokensRepository(app.deps.pg);
  const changes = tokenChanges(app, 'api_tokens', repo, (accountSid, sid) => repo.delete(accountSid, sid));

  app.get(
    '/v1/accounts/:accountSid/apiTokens',
    {
      preHandler: requireScope('tokens:read'),
      schema: {
        tags: ['apiTokens'],
        summary: 'List API tokens (values are never shown)',
        params: accountParams,
        querystring: listQuery(API_TOKEN_SORTS, 'createdAt'),
        response: { 200: ref('apiTokenList') },
      },
    },
    async (req) => repo.list(req.params.accountSid, req.query),
  );

  app.get(
    '/v1/accounts/:accountSid/apiTokens/:apiTokenSid',
    {
      preHandler: requireScope('tokens:read'),
      schema: {
        tags: ['apiTokens'],
        summary: 'Get an API token (without its value)',
        params: tokenParams,
        response: { 200: ref('apiToken') },
      },
    },
    async (req) => repo.get(req.params.accountSid, req.params.apiTokenSid),
  );

  app.post(
    '/v1/accounts/:accountSid/apiTokens',
    {
      preHandler: requireScope('tokens:write'),
      schema: {
        tags: ['apiTokens'],
        summary: 'Create an API token; the response carries its value, once',
        description:
          'The caller can only grant scopes it holds (403 with `details.notHeld`). When the caller ' +
          'expires, the new token expires no later: a later or missing `expiresAt` becomes the caller’s.',
        params: accountParams,
        body: ref('apiTokenCreate'),
        response: { 201: ref('apiToken') },
      },
    },
    async (req, reply) => {
      const body = req.body;
      const scopes = [...new Set(body.scopes)];
      const unknown = scopes.filter((s) => !KNOWN_SCOPES.has(s));
      if (unknown.length) {
        throw validation(`Unknown scope ${unknown.map((s) => `"${s}"`).join(', ')}`, {
          'body.scopes': `unknown scope(s): ${unknown.join(', ')}`,
        });
      }
      rejectPastExpiry(body.expiresAt);
      // No privilege escalation: a token can only hand out scopes it holds itself (the scopes it
      // was given plus those they grant), and it lives no longer than its maker.
      requireHeld(req.principal, scopes, 'Cannot grant scopes the caller does not hold');
      const created = await repo.create(req.params.accountSid, {
        ...body,
        scopes,
        expiresAt: cappedExpiry(body.expiresAt, req.principal),
      });
      req.log.info({ sid: created.sid, scopes }, 'api token created');
      return reply.status(201).send(created);
    },
  );

  app.put(
    '/v1/accounts/:accountSid/apiTokens/:apiTokenSid',
    {
      preHandler: requireScope('tokens:write'),
      schema: {
        tags: ['apiTokens'],
        summary: 'Rename, describe, deactivate or reactivate an API token',
        description:
          'Scopes never change. A caller may only change a token whose scopes it holds itself ' +
          '(403 with `details.notHeld` otherwise), so no one reactivates or takes over a stronger token. ' +
          "A caller that expires brings the token's expiry down to its own when it is later or never.",
        params: tokenParams,
        body: ref('apiTokenUpdate'),
        response: { 200: ref('apiToken') },
      },
    },
    async (req) => {
      // The rule of create applies to changes, which include reactivating a token.
      const { accountSid, apiTokenSid } = req.params;
      await changes.requireHoldsScopesOf(req.principal, accountSid, apiTokenSid);
      return changes.update(req.principal, accountSid, apiTokenSid, req.body);
    },
  );

  app.delete(
    '/v1/accounts/:accountSid/apiTokens/:apiTokenSid',
    {
      preHandler: requireScope('tokens:delete'),
      schema: {
        tags: ['apiTokens'],
        summary: 'Delete an API token; access ends at once',
        params: tokenParams,
        response: { 200: ref('deleted') },
      },
    },
    async (req) => changes.remove(req.params.accountSid, req.params.apiTokenSid),
  );
}
