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
import { ajv, errorDetails } from '../../shared/schemas.js';
import type { EventsRepository } from '../events/events.repository.js';
import { checkBucketsInScope, ToolError, type McpDeps, type McpScope } from './mcp.context.js';
import { failure, fitList, json } from './mcp.output.js';
import { CONSUMER_TOOLS } from './tools/consumers.tools.js';
import { comparePeriods } from './tools/compare-periods.tools.js';
import { METRICS_TOOLS } from './tools/metrics.tools.js';
import { REQUEST_TOOLS } from './tools/requests.tools.js';
import type { ToolSpec } from './tools/tool.js';
import { WORKFLOW_TOOLS } from './tools/workflows.tools.js';
import { RELEASE_TOOLS } from './tools/releases.tools.js';

export type { McpDeps, McpScope } from './mcp.context.js';

/** The read-only tools over traffic, requests and workflows, by name. */
const READ_TOOLS = new Map<string, ToolSpec<never>>(
  [
    ...METRICS_TOOLS,
    comparePeriods,
    ...REQUEST_TOOLS,
    ...WORKFLOW_TOOLS,
    ...CONSUMER_TOOLS,
    ...RELEASE_TOOLS,
  ].map((t) => [t.tool.name, t as ToolSpec<never>]),
);

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

const EVENT_TOOLS: Tool[] = [
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

export const MCP_TOOLS: Tool[] = [...EVENT_TOOLS, ...[...READ_TOOLS.values()].map((t) => t.tool)];

/**
 * The scope each tool needs, the one its /v1 counterpart needs. A token holds the tool scopes its
 * creator held (McpScope.scopes), so it never reads what its creator could not.
 */
const TOOL_SCOPE: Readonly<Record<string, string>> = {
  list_events: 'events:read',
  create_event: 'events:write',
  list_buckets: 'buckets:read',
  get_metrics_summary: 'metrics:read',
  get_endpoint_performance: 'metrics:read',
  get_errors: 'metrics:read',
  get_timeseries: 'metrics:read',
  compare_periods: 'metrics:read',
  search_requests: 'requests:read',
  get_request: 'requests:read',
  list_workflows: 'workflows:read',
  list_workflow_executions: 'workflows:read',
  list_consumers: 'metrics:read',
  get_consumer: 'metrics:read',
  get_release_impact: 'events:read',
  list_slos: 'metrics:read',
  get_slo_status: 'metrics:read',
};

let validators: { list: ValidateFunction<ListArgs>; create: ValidateFunction<CreateArgs> } | undefined;
function validate(): NonNullable<typeof validators> {
  validators ??= {
    list: ajv().compile<ListArgs>(mcpListEventsInput),
    create: ajv().compile<CreateArgs>(mcpCreateEventInput),
  };
  return validators;
}

/** Invalid arguments, each failing field named in the message and in `details`. */
function invalid(errors: Parameters<typeof errorDetails>[0]): CallToolResult {
  const details = errorDetails(errors);
  const list = Object.entries(details).map(([field, why]) => `${field} ${String(why)}`);
  return failure(`Invalid arguments: ${list.join('; ')}`, details);
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
  // Unchanged unless 100 long events pass the output cap: then the oldest are cut, saying so.
  return json(
    fitList({ ...page }, 'records', 'Lower limit, or narrow with type, bucketSid or startTime/endTime.'),
  );
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
 * A low-level MCP `Server` with the event tools and the read-only tools. NOTE: the SDK's
 * high-level `McpServer` wants zod schemas; ours are JSON Schemas built from schemas/ (one
 * contract), validated with the shared ajv. One server per HTTP request (stateless transport),
 * bound to the caller's scope.
 */
export function buildMcpServer(deps: McpDeps, scope: McpScope): Server {
  const server = new Server({ name: 'tapline', version: '2.0.1' }, { capabilities: { tools: {} } });
  // A token lists only the tools it may call.
  const usable = MCP_TOOLS.filter((t) => scope.scopes.has(TOOL_SCOPE[t.name] ?? ''));
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: usable }));
  server.setRequestHandler(CallToolRequestSchema, async (req): Promise<CallToolResult> => {
    const name = req.params.name;
    const args: unknown = structuredClone(req.params.arguments ?? {});
    const log = deps.log.child({ tool: name, accountSid: scope.accountSid, tokenSid: scope.tokenSid });
    try {
      const needed = TOOL_SCOPE[name];
      if (needed !== undefined && !scope.scopes.has(needed))
        return failure(
          `This MCP token cannot use ${name}: it needs ${needed}, which the token's creator did not hold`,
          { requiredScope: needed },
        );
      if (name === 'list_events') {
        const v = validate().list;
        if (!v(args)) return invalid(v.errors);
        return await listEvents(deps.events, scope, args);
      }
      if (name === 'create_event') {
        const v = validate().create;
        if (!v(args)) return invalid(v.errors);
        const res = await createEvent(deps.events, scope, args);
        log.info('event created through MCP');
        return res;
      }
      const spec = READ_TOOLS.get(name);
      if (spec) {
        const v = spec.validate();
        if (!v(args)) return invalid(v.errors);
        return json(await spec.run({ deps, scope }, args));
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
