import type { FastifyInstance } from 'fastify';
import type { SchemaTypes } from '../api.types.js';
import { ref } from '../../../schemas/index.js';
import { accountParams, listQuery, sidParams } from '../../../schemas/common.schema.js';
import { MCP_TOOL_SCOPES } from '../../../schemas/scopes.js';
import type { Principal } from '../../shared/credentials.js';
import { requireScope } from '../plugins/auth.plugin.js';
import { MCP_TOKEN_SORTS, McpTokensRepository } from '../tokens/mcp-tokens.repository.js';
import { cappedExpiry, requireHeld } from '../tokens/token-inheritance.js';
import { rejectPastExpiry, tokenChanges } from './token-changes.js';

const tokenParams = sidParams('accountSid', 'mcpTokenSid');

/**
 * Minting an MCP token needs the event scopes its event tools always carry. The token records the
 * tool scopes its creator holds (MCP_TOOL_SCOPES): the other tools answer only within those, so a
 * credential that cannot read traffic mints no token that can.
 */
const MCP_REQUIRED = ['events:read', 'events:write'] as const;

function requireMcpGrants(principal: Principal): void {
  requireHeld(
    principal,
    MCP_REQUIRED,
    `An MCP token grants ${MCP_REQUIRED.join(' and ')}; the caller does not hold`,
  );
}

/** MCP tokens (docs/events-mcp.md): value shown once on create, masked elsewhere; DELETE revokes. */
export default async function mcpTokensRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const repo = new McpTokensRepository(app.deps.pg);
  const changes = tokenChanges(app, 'mcp_tokens', repo, (accountSid, sid) => repo.revoke(accountSid, sid));

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
        description:
          'Needs `events:read` and `events:write`. The token records, in `scopes`, the tool scopes the ' +
          'caller holds; a tool needing another answers an error. When the caller expires, the token ' +
          'expires no later (docs/auth.md "Token inheritance").',
        params: accountParams,
        body: ref('mcpTokenCreate'),
        response: { 201: ref('mcpToken') },
      },
    },
    async (req, reply) => {
      requireMcpGrants(req.principal);
      rejectPastExpiry(req.body.expiresAt);
      const created = await repo.create(req.params.accountSid, {
        ...req.body,
        scopes: MCP_TOOL_SCOPES.filter((s) => req.principal.scopes.has(s)),
        expiresAt: cappedExpiry(req.body.expiresAt, req.principal),
      });
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
          'Changing `bucketSids` or `expiresAt` needs `events:read`, `events:write` and every scope ' +
          'the token holds (docs/auth.md "Token rules"). A caller that expires brings the token\'s ' +
          'expiry down to its own when it is later or never.',
        params: tokenParams,
        body: ref('mcpTokenUpdate'),
        response: { 200: ref('mcpToken') },
      },
    },
    async (req) => {
      const { accountSid, mcpTokenSid } = req.params;
      if (req.body.bucketSids !== undefined || req.body.expiresAt !== undefined) {
        requireMcpGrants(req.principal);
        // Widening or prolonging a token reaches what its tools reach: the caller must hold that.
        await changes.requireHoldsScopesOf(req.principal, accountSid, mcpTokenSid);
      }
      rejectPastExpiry(req.body.expiresAt);
      return changes.update(req.principal, accountSid, mcpTokenSid, req.body);
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
    async (req) => changes.remove(req.params.accountSid, req.params.mcpTokenSid),
  );
}
