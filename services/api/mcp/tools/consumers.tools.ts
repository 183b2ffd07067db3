import { resolveRange } from '../../metrics/metrics-range.js';
import { bucketFilter, ToolError, type ToolContext } from '../mcp.context.js';
import { getConsumerInput, listConsumersInput, type CONSUMER_TOOL_SORTS } from '../mcp.inputs.js';
import { defineTool } from './tool.js';

/**
 * API consumers (docs/consumers.md) over MCP: the list and one consumer, as the /v1 consumers
 * endpoints answer them, in the token's environment and buckets.
 */

interface ListArgs {
  startDate?: string;
  endDate?: string;
  bucketSid?: string;
  sort: (typeof CONSUMER_TOOL_SORTS)[number];
  order: 'asc' | 'desc';
  q?: string;
  limit: number;
}

interface GetArgs {
  consumerId: string;
  startDate?: string;
  endDate?: string;
  bucketSid?: string;
}

/** The token's environment and buckets around a range. */
async function scopeOf(ctx: ToolContext, args: { startDate?: string; endDate?: string; bucketSid?: string }) {
  return {
    accountSid: ctx.scope.accountSid,
    environmentSid: ctx.scope.environmentSid,
    ...(await bucketFilter(ctx, args.bucketSid)),
    range: resolveRange(args, Date.now()),
  };
}

export const listConsumers = defineTool<ListArgs>(
  {
    name: 'list_consumers',
    title: 'List API consumers',
    description:
      "Who calls the API: the consumers with traffic in the range in this token's environment and buckets " +
      '(id, name, group, requestCount, errorCount, errorRate in percent, p50/p95/p99 in ms, firstSeenAt, lastSeenAt), ' +
      'busiest first by default. Returns JSON {consumers, hasMore}.',
    inputSchema: listConsumersInput,
  },
  async (ctx, args) => {
    const page = await ctx.deps.consumers.list(await scopeOf(ctx, args), {
      sort: args.sort,
      order: args.order,
      q: args.q,
      page: 1,
      limit: args.limit,
    });
    return { consumers: page.records, hasMore: page.hasMore };
  },
);

export const getConsumer = defineTool<GetArgs>(
  {
    name: 'get_consumer',
    title: 'One API consumer',
    description:
      "One consumer over the range in this token's environment and buckets (an error when it made no call there): its counts, error rate and percentiles, " +
      'and the endpoints it called (method, endpoint, requestCount, errorCount, p95). Returns JSON.',
    inputSchema: getConsumerInput,
  },
  async (ctx, args) => {
    // Only what the token's environment saw: a consumer of another environment is not shown.
    const found = await ctx.deps.consumers.get(await scopeOf(ctx, args), args.consumerId, {
      inRangeOnly: true,
    });
    if (!found)
      throw new ToolError('No call from this consumer in the range', {
        consumerId: "no call in this token's environment and buckets in the range",
      });
    return found;
  },
);

export const CONSUMER_TOOLS = [listConsumers, getConsumer];
