import type { FastifyInstance } from 'fastify';
import type { SchemaTypes } from '../api.types.js';
import { ref } from '../../../schemas/index.js';
import { accountParams, listQuery } from '../../../schemas/common.schema.js';
import { AppError, validation } from '../../shared/errors.js';
import type { Principal } from '../../shared/credentials.js';
import { requireScope } from '../plugins/auth.plugin.js';
import { MCP_TOKEN_SORTS, McpTokensRepository } from '../mcp-tokens.repository.js';

const tokenParams = {
  type: 'object',
  required: ['accountSid', 'mcpTokenSid'],
  properties: {
    accountSid: { type: 'string', maxLength: 64 },
    mcpTokenSid: { type: 'string', maxLength: 64 },
  },
} as const;

/**
 * What an MCP token can do through /mcp (list_events, create_event). Minting one needs these
 * too, so a credential cannot hand out more than it holds.
 */
const MCP_GRANTS = ['events:read', 'events:write'] as const;

/**
 * Minting a token, and widening or prolonging one (a new bucket list, `[]` = every bucket, or a new
 * expiry), need what the token grants: the same rule on create and update.
 */
function requireMcpGrants(principal: Principal): void {
  const notHeld = MCP_GRANTS.filter((s) => !principal.scopes.has(s));
  if (notHeld.length) {
    throw new AppError(
      403,
      'FORBIDDEN',
      `An MCP token grants ${MCP_GRANTS.join(' and ')}; the caller lacks ${notHeld.join(', ')}`,
      { notHeld },
    );
  }
}

/** An expiry must lie in the future (null = never). */
function checkExpiry(expiresAt: string | null | undefined): void {
  if (expiresAt && Date.parse(expiresAt) <= Date.now())
    throw validation('expiresAt is in the past', { 'body.expiresAt': 'must be in the future' });
}

/** MCP tokens (spec 4.3): value shown once on create, masked elsewhere; DELETE revokes. */
export default async function mcpTokensRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const repo = new McpTokensRepository(app.deps.pg);
  // This process forgets cached credentials before answering; others follow the NOTIFY.
  const dropCachedCredentials = () => app.deps.credentials.invalidate();

  app.get(
    '/v1/accounts/:accountSid/mcpTokens',
    {
      preHandler: requireScope('mcpTokens:read'),
      schema: {
        tags: ['mcpTokens'],
        summary: 'List MCP tokens (values masked), revoked ones included',
        params: accountParams,
        querystring: listQuery(MCP_TOKEN_SORTS, 'createdAt'),
        response: { 200: ref('mcpTokenList') },
      },
    },
    async (req) => repo.list(req.params.accountSid, req.query),
  );

  app.get(
    '/v1/accounts/:accountSid/mcpTokens/:mcpTokenSid',
    {
      preHandler: requireScope('mcpTokens:read'),
      schema: {
        tags: ['mcpTokens'],
        summary: 'Get an MCP token (value masked)',
        params: tokenParams,
        response: { 200: ref('mcpToken') },
      },
    },
    async (req) => repo.get(req.params.accountSid, req.params.mcpTokenSid),
  );

  app.post(
    '/v1/accounts/:accountSid/mcpTokens',
    {
      preHandler: requireScope('mcpTokens:write'),
      schema: {
        tags: ['mcpTokens'],
        summary: 'Create an MCP token; the response carries its full value, once',
        params: accountParams,
        body: ref('mcpTokenCreate'),
        response: { 201: ref('mcpToken') },
      },
    },
    async (req, reply) => {
      requireMcpGrants(req.principal);
      checkExpiry(req.body.expiresAt);
      const created = await repo.create(req.params.accountSid, req.body);
      req.log.info({ sid: created.sid, environmentSid: created.environmentSid }, 'mcp token created');
      return reply.status(201).send(created);
    },
  );

  app.put(
    '/v1/accounts/:accountSid/mcpTokens/:mcpTokenSid',
    {
      preHandler: requireScope('mcpTokens:write'),
      schema: {
        tags: ['mcpTokens'],
        summary: 'Rename an MCP token, change its buckets or its expiry (only given fields change)',
        description:
          'Changing `bucketSids` or `expiresAt` needs `events:read` and `events:write`, as creating ' +
          'a token does (docs/auth.md "Token rules").',
        params: tokenParams,
        body: ref('mcpTokenUpdate'),
        response: { 200: ref('mcpToken') },
      },
    },
    async (req) => {
      if (req.body.bucketSids !== undefined || req.body.expiresAt !== undefined)
        requireMcpGrants(req.principal);
      checkExpiry(req.body.expiresAt);
      const updated = await repo.update(req.params.accountSid, req.params.mcpTokenSid, req.body);
      dropCachedCredentials();
      return updated;
    },
  );

  app.delete(
    '/v1/accounts/:accountSid/mcpTokens/:mcpTokenSid',
    {
      preHandler: requireScope('mcpTokens:delete'),
      schema: {
        tags: ['mcpTokens'],
        summary: 'Revoke an MCP token; access ends at once',
        params: tokenParams,
        response: { 200: ref('deleted') },
      },
    },
    async (req) => {
      await repo.revoke(req.params.accountSid, req.params.mcpTokenSid);
      dropCachedCredentials();
      return { sid: req.params.mcpTokenSid, deleted: true };
    },
  );
}
