import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { bearerToken } from '../../shared/bearer.js';
import { AppError, invalidToken } from '../../shared/errors.js';
import { logger } from '../../shared/logger.js';
import { BucketsRepository } from '../buckets/buckets.repository.js';
import { EventsRepository } from '../events/events.repository.js';
import { ConsumersRepository } from '../consumers/consumers.repository.js';
import { MetricsRepository } from '../metrics/metrics.repository.js';
import { RequestsRepository } from '../requests/requests.repository.js';
import { WorkflowsRepository } from '../workflows/workflows.repository.js';
import { ImpactService } from '../../releases/impact.service.js';
import { sloStatus } from '../../slo/slo.status.js';
import { SlosRepository } from '../../slo/slos.repository.js';
import { WindowLimiter } from '../../shared/window-limiter.js';
import { buildMcpServer, type McpDeps, type McpScope } from './mcp.tools.js';

const log = logger('mcp');

/** JSON-RPC error code of a refusal for too many requests (the implementation-defined server range). */
export const MCP_RATE_LIMITED = -32029;

/**
 * The MCP endpoint (docs/auth.md): Streamable HTTP in stateless mode, one server + transport per
 * POST. Only MCP tokens (`mcp_…`) are accepted here, and they are refused everywhere else.
 */
export default async function mcpRoutes(app: FastifyInstance): Promise<void> {
  const pool = app.deps.pg;
  // The repositories of the /v1 routes: the tools have no query of their own.
  const deps: McpDeps = {
    events: new EventsRepository(pool),
    buckets: new BucketsRepository(pool),
    metrics: new MetricsRepository(app.deps.ch, pool, app.deps.cfg.clickhouse.retentionDays),
    consumers: new ConsumersRepository(app.deps.ch, pool, app.deps.cfg.clickhouse.retentionDays),
    requests: new RequestsRepository(app.deps.ch, pool),
    workflows: new WorkflowsRepository(pool),
    impact: new ImpactService(pool, app.deps.ch),
    slos: new SlosRepository(pool),
    sloStatus: (slo) => sloStatus(app.deps.ch, slo),
    log,
  };

  const perToken = new WindowLimiter(app.deps.cfg.limits.mcpPerToken);

  async function authenticate(req: FastifyRequest): Promise<McpScope> {
    const token = bearerToken(req);
    if (!token) throw invalidToken();
    const principal = await app.deps.credentials.authenticate(token, 'mcp');
    if (!principal || principal.kind !== 'mcpToken')
      throw invalidToken(
        token.startsWith('mcp_')
          ? 'The MCP token is not valid: unknown, revoked or expired'
          : 'An MCP token (mcp_…) is required',
      );
    // Requests per minute per MCP token (docs/security.md "Limits"): a 429 with Retry-After.
    perToken.check(principal.credentialSid, 'MCP token');
    // NOTE: the credential cache is cleared by NOTIFY, which arrives a moment after the revoking
    // commit. Re-reading the row (one index probe; MCP traffic is light) makes a revocation or a
    // changed bucket list apply to the very next call, with no window at all.
    const r = await pool.query<{ environment_sid: string; bucket_sids: string[]; scopes: string[] }>(
      'SELECT environment_sid, bucket_sids, scopes FROM mcp_tokens WHERE sid = $1 AND NOT is_revoked AND (expires_at IS NULL OR expires_at > now())',
      [principal.credentialSid],
    );
    const row = r.rows[0];
    if (!row) throw invalidToken();
    return {
      accountSid: principal.accountSid,
      tokenSid: principal.credentialSid,
      environmentSid: row.environment_sid,
      bucketSids: row.bucket_sids,
      scopes: new Set(row.scopes),
    };
  }

  /**
   * The JSON-RPC `id` of the request a refusal answers: the body's own when it is one request,
   * else null (a batch, a notification or no body).
   */
  const rpcId = (body: unknown): string | number | null => {
    const id = body !== null && typeof body === 'object' ? (body as { id?: unknown }).id : undefined;
    return typeof id === 'string' || typeof id === 'number' ? id : null;
  };

  /**
   * Authenticates, answering a refusal for too many requests as a JSON-RPC error: MCP clients show
   * a JSON-RPC error body's message to the person (a body in any other shape reaches them only as
   * "Server returned an error response"). `data` carries the envelope's code and details; the
   * status stays 429 with Retry-After. Null when the answer is sent.
   */
  async function authenticateRpc(req: FastifyRequest, reply: FastifyReply): Promise<McpScope | null> {
    try {
      return await authenticate(req);
    } catch (err) {
      if (!(err instanceof AppError) || err.status !== 429) throw err;
      const retryAfter = (err.details as { retryAfter?: unknown }).retryAfter;
      if (typeof retryAfter === 'number') void reply.header('Retry-After', String(retryAfter));
      await reply.status(429).send({
        jsonrpc: '2.0',
        id: rpcId(req.body),
        error: {
          code: MCP_RATE_LIMITED,
          message: `${err.message}${typeof retryAfter === 'number' ? `; retry in ${retryAfter} s` : ''}`,
          data: { code: err.code, details: err.details },
        },
      });
      return null;
    }
  }

  const schema = {
    tags: ['mcp'],
    summary:
      'MCP endpoint (Streamable HTTP, JSON-RPC): list_events, create_event and read-only tools over ' +
      "the token's traffic, requests and workflows (docs/events-mcp.md)",
    description:
      'Authenticate with `Authorization: Bearer mcp_…`. Stateless: every POST carries one JSON-RPC ' +
      'message or batch; GET and DELETE answer 405 (no server-initiated stream, no session).',
  } as const;

  app.post('/mcp', { schema }, async (req: FastifyRequest, reply: FastifyReply) => {
    const scope = await authenticateRpc(req, reply);
    if (!scope) return reply;
    const server = buildMcpServer(deps, scope);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    // From here the SDK writes the response: Fastify must not send one as well.
    reply.hijack();
    reply.raw.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req.raw, reply.raw, req.body);
    } catch (err) {
      log.error({ err }, 'MCP request failed');
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(500, { 'content-type': 'application/json' });
        reply.raw.end(
          JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null }),
        );
      }
    }
  });

  const notAllowed = async (req: FastifyRequest, reply: FastifyReply) => {
    if (!(await authenticateRpc(req, reply))) return reply;
    return reply
      .status(405)
      .header('allow', 'POST')
      .send({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null });
  };
  app.get('/mcp', { schema }, notAllowed);
  app.delete('/mcp', { schema }, notAllowed);
}
