import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { ValidateFunction } from 'ajv';
import { mcpCreateEventInput, mcpListEventsInput } from '../../../schemas/events.schema.js';
import { AppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { ajv, errorDetails } from '../../shared/schemas.js';
import type { EventsRepository } from '../events.repository.js';

/** What an MCP token may see: one environment and its listed buckets (empty = every bucket). */
export interface McpScope {
  accountSid: string;
  tokenSid: string;
  environmentSid: string;
  bucketSids: string[];
}

interface ListArgs {
  type?: string;
  startTime?: string;
  endTime?: string;
  bucketSid?: string;
  limit: number;
}

interface CreateArgs {
  type: string;
  name: string;
  description?: string;
  metadata?: Record<string, unknown>;
  bucketSids?: string[];
  startedAt?: string;
  endedAt?: string | null;
}

export const MCP_TOOLS: Tool[] = [
  {
    name: 'list_events',
    title: 'List event markers',
    description:
      'Lists event markers (deployments, incidents, config changes, scaling, custom) visible to this ' +
      "token's environment and buckets, newest first. An event is returned when [startedAt, endedAt] " +
      'meets [startTime, endTime]. Returns JSON {hasMore, records}.',
    inputSchema: mcpListEventsInput as unknown as Tool['inputSchema'],
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  {
    name: 'create_event',
    title: 'Create an event marker',
    description:
      'Records an event marker in this token\'s environment (source "mcp"). bucketSids default to the ' +
      "token's buckets, or every bucket when the token has no bucket list. Returns the created event as JSON.",
    inputSchema: mcpCreateEventInput as unknown as Tool['inputSchema'],
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  },
];

let validators: { list: ValidateFunction<ListArgs>; create: ValidateFunction<CreateArgs> } | undefined;
function validate(): NonNullable<typeof validators> {
  validators ??= {
    list: ajv().compile<ListArgs>(mcpListEventsInput),
    create: ajv().compile<CreateArgs>(mcpCreateEventInput),
  };
  return validators;
}

class ToolError extends Error {
  constructor(
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

const json = (value: unknown): CallToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(value) }],
});
const failure = (message: string, details: Record<string, unknown> = {}): CallToolResult => ({
  isError: true,
  content: [{ type: 'text', text: JSON.stringify({ error: message, details }) }],
});

function checkBucketsInScope(scope: McpScope, sids: string[]): void {
  if (!scope.bucketSids.length) return;
  const outside = sids.filter((s) => !scope.bucketSids.includes(s));
  if (outside.length)
    throw new ToolError(`Bucket(s) outside this token's buckets: ${outside.join(', ')}`, {
      bucketSids: scope.bucketSids,
    });
}

async function listEvents(
  events: EventsRepository,
  scope: McpScope,
  args: ListArgs,
): Promise<CallToolResult> {
  if (args.startTime && args.endTime && Date.parse(args.startTime) > Date.parse(args.endTime))
    throw new ToolError('startTime is after endTime');
  if (args.bucketSid) checkBucketsInScope(scope, [args.bucketSid]);
  const page = await events.list(
    scope.accountSid,
    {
      type: args.type,
      startTime: args.startTime,
      endTime: args.endTime,
      environmentSid: scope.environmentSid,
      bucketSid: args.bucketSid,
      anyOfBuckets: args.bucketSid ? undefined : scope.bucketSids,
    },
    { page: 1, limit: args.limit, sort: 'startedAt', order: 'desc' },
  );
  return json(page);
}

async function createEvent(
  events: EventsRepository,
  scope: McpScope,
  args: CreateArgs,
): Promise<CallToolResult> {
  // A token limited to some buckets may not mark every bucket: `*` is outside its list.
  const bucketSids = args.bucketSids ?? (scope.bucketSids.length ? scope.bucketSids : ['*']);
  checkBucketsInScope(scope, bucketSids);
  const event = await events.create(scope.accountSid, {
    type: args.type,
    name: args.name,
    description: args.description ?? null,
    metadata: args.metadata ?? null,
    bucketSids,
    environmentSids: [scope.environmentSid],
    source: 'mcp',
    startedAt: args.startedAt,
    endedAt: args.endedAt ?? null,
  });
  return json(event);
}

/**
 * A low-level MCP `Server` with the two tools. NOTE: the SDK's high-level `McpServer` wants zod
 * schemas; ours are JSON Schemas in schemas/ (one contract), validated with the shared ajv.
 * One server per HTTP request (stateless transport), bound to the caller's scope.
 */
export function buildMcpServer(deps: { events: EventsRepository; log: Logger }, scope: McpScope): Server {
  const server = new Server({ name: 'tapline', version: '2.0.1' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: MCP_TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (req): Promise<CallToolResult> => {
    const name = req.params.name;
    const args: unknown = structuredClone(req.params.arguments ?? {});
    const log = deps.log.child({ tool: name, accountSid: scope.accountSid, tokenSid: scope.tokenSid });
    try {
      if (name === 'list_events') {
        const v = validate().list;
        if (!v(args)) return failure('Invalid arguments', errorDetails(v.errors));
        return await listEvents(deps.events, scope, args);
      }
      if (name === 'create_event') {
        const v = validate().create;
        if (!v(args)) return failure('Invalid arguments', errorDetails(v.errors));
        const res = await createEvent(deps.events, scope, args);
        log.info('event created through MCP');
        return res;
      }
      return failure(`Unknown tool ${JSON.stringify(name.slice(0, 64))}`);
    } catch (err) {
      if (err instanceof ToolError) return failure(err.message, err.details);
      if (err instanceof AppError && err.status < 500) return failure(err.message, err.details);
      log.error({ err }, 'MCP tool failed');
      return failure('Internal error');
    }
  });
  return server;
}
