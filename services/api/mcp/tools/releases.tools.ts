import { AppError } from '../../../shared/errors.js';
import { ToolError, checkBucketsInScope, visibleEvent, type ToolContext } from '../mcp.context.js';
import { defineTool } from './tool.js';

/** Release impact and SLOs (docs/releases.md, docs/slos.md) for MCP, within the token's scope. */

const getReleaseImpactInput = {
  type: 'object',
  required: ['eventSid'],
  additionalProperties: false,
  properties: {
    eventSid: { type: 'string', minLength: 1, maxLength: 64, description: 'a deployment event' },
  },
} as const;

const listSlosInput = {
  type: 'object',
  additionalProperties: false,
  properties: {
    page: { type: 'integer', minimum: 1, maximum: 1000, default: 1 },
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 25 },
  },
} as const;

const getSloStatusInput = {
  type: 'object',
  required: ['sloSid'],
  additionalProperties: false,
  properties: { sloSid: { type: 'string', minLength: 1, maxLength: 64 } },
} as const;

/** An SLO of the account on a bucket the token may read; anything else is "not found". */
async function visibleSlo(ctx: ToolContext, sloSid: string) {
  try {
    const slo = await ctx.deps.slos.get(ctx.scope.accountSid, sloSid);
    checkBucketsInScope(ctx.scope, [slo.bucketSid]);
    return slo;
  } catch (err) {
    if ((err instanceof AppError && err.status === 404) || err instanceof ToolError)
      throw new ToolError(`SLO ${sloSid} not found for this token`, { sloSid: 'unknown SLO' });
    throw err;
  }
}

export const RELEASE_TOOLS = [
  defineTool<{ eventSid: string }>(
    {
      name: 'get_release_impact',
      title: 'Release impact of a deployment',
      description:
        "For a deployment event: per endpoint and method, the minutes before the marker against the minutes after it (the bucket's " +
        'release settings: 30 and 30 by default, the first 2 minutes skipped), with p50/p95/p99, error rate and a verdict regressed / improved / ' +
        'unchanged / insufficient (Mann-Whitney U on durations, two-proportion test on errors, minimum effect sizes), ' +
        "regressed first, within this token's environment and buckets; a regressed endpoint whose calls carry consumers lists " +
        'the consumers it hits (each judged on its own calls, at most 10) with consumersHit and consumersTotal. ' +
        'Returns JSON {status, window, summary, endpoints}.',
      inputSchema: getReleaseImpactInput,
    },
    async (ctx, args) => {
      const s = ctx.scope;
      const ev = await visibleEvent(ctx, args.eventSid);
      if (ev.type !== 'deployment')
        throw new ToolError(`Event ${args.eventSid} is a ${ev.type} event: impact is for deployments`, {
          eventSid: 'not a deployment',
        });
      // The windows of the buckets read (docs/releases.md "Windows").
      const impact = await ctx.deps.impact.analyse(
        ev,
        {},
        { bucketSids: s.bucketSids, environmentSid: s.environmentSid },
        new Date(),
      );
      return { event: { sid: ev.sid, name: ev.name, startedAt: ev.startedAt }, ...impact };
    },
  ),
  defineTool<{ page: number; limit: number }>(
    {
      name: 'list_slos',
      title: 'List SLOs',
      description:
        "Lists the SLOs of the token's buckets (name, bucket, environment, endpoint, method, SLI, objective, " +
        'windowDays), oldest first. Returns JSON {hasMore, records}.',
      inputSchema: listSlosInput,
    },
    async (ctx, args) => {
      const page = await ctx.deps.slos.list(ctx.scope.accountSid, args);
      const b = ctx.scope.bucketSids;
      return {
        ...page,
        records: b.length ? page.records.filter((r) => b.includes(r.bucketSid)) : page.records,
      };
    },
  ),
  defineTool<{ sloSid: string }>(
    {
      name: 'get_slo_status',
      title: 'Status of an SLO',
      description:
        'The SLI over the window against the objective, the error budget (total, consumed, remaining, in calls), ' +
        'burn rates over 5m, 30m, 1h, 6h and 3d, status ok / warning / breaching, and the daily series. Returns JSON.',
      inputSchema: getSloStatusInput,
    },
    async (ctx, args) => ctx.deps.sloStatus(await visibleSlo(ctx, args.sloSid)),
  ),
];
