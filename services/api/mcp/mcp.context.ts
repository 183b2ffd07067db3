import { AppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Bucket, BucketsRepository } from '../buckets/buckets.repository.js';
import type { EventMarker, EventsRepository } from '../events/events.repository.js';
import type { ConsumersRepository } from '../consumers/consumers.repository.js';
import type { MetricsRepository } from '../metrics/metrics.repository.js';
import type { RequestsRepository } from '../requests/requests.repository.js';
import type { WorkflowsRepository } from '../workflows/workflows.repository.js';
import type { ImpactService } from '../../releases/impact.service.js';
import type { SloStatus } from '../../slo/slo.status.js';
import type { Slo, SlosRepository } from '../../slo/slos.repository.js';

/** What an MCP token may see: one environment and its listed buckets (empty = every bucket). */
export interface McpScope {
  accountSid: string;
  tokenSid: string;
  environmentSid: string;
  bucketSids: string[];
  /** the tool scopes the token's creator held (docs/auth.md "MCP tokens") */
  scopes: ReadonlySet<string>;
}

/** The repositories the `/v1` routes use; the tools read through them and nothing else. */
export interface McpDeps {
  events: EventsRepository;
  buckets: BucketsRepository;
  metrics: MetricsRepository;
  consumers: ConsumersRepository;
  requests: RequestsRepository;
  workflows: WorkflowsRepository;
  impact: ImpactService;
  slos: SlosRepository;
  sloStatus: (slo: Slo) => Promise<SloStatus>;
  log: Logger;
}

export interface ToolContext {
  deps: McpDeps;
  scope: McpScope;
}

/** A tool error the caller can act on: returned as `isError` with `{error, details}`. */
export class ToolError extends Error {
  constructor(
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export function checkBucketsInScope(scope: McpScope, sids: string[]): void {
  if (!scope.bucketSids.length) return;
  const outside = sids.filter((s) => !scope.bucketSids.includes(s));
  if (outside.length)
    throw new ToolError(`Bucket(s) outside this token's buckets: ${outside.join(', ')}`, {
      bucketSids: scope.bucketSids,
    });
}

/** One bucket named by the caller: inside the token's list and a bucket of the account. */
export async function checkedBucket(ctx: ToolContext, bucketSid: string): Promise<Bucket> {
  checkBucketsInScope(ctx.scope, [bucketSid]);
  try {
    return await ctx.deps.buckets.get(ctx.scope.accountSid, bucketSid);
  } catch (err) {
    if (err instanceof AppError && err.status === 404)
      throw new ToolError(`Bucket ${bucketSid} is not a bucket of this account`, {
        bucketSid: 'unknown bucket',
      });
    throw err;
  }
}

/**
 * One event marker named by the caller, as the token sees it: an event of the account whose
 * environments and buckets meet the token's. Any other (or none) is the same "not found".
 */
export async function visibleEvent(ctx: ToolContext, eventSid: string): Promise<EventMarker> {
  const s = ctx.scope;
  let ev: EventMarker | undefined;
  try {
    ev = await ctx.deps.events.get(s.accountSid, eventSid);
  } catch (err) {
    if (!(err instanceof AppError && err.status === 404)) throw err;
  }
  const visible =
    ev &&
    (ev.environmentSids.includes('*') || ev.environmentSids.includes(s.environmentSid)) &&
    (!s.bucketSids.length || ev.bucketSids.some((b) => b === '*' || s.bucketSids.includes(b)));
  if (!ev || !visible)
    throw new ToolError(`Event ${eventSid} not found for this token`, { eventSid: 'unknown event' });
  return ev;
}

/**
 * The bucket filter of an aggregate query: the caller's bucket (checked), else the token's bucket
 * list, else none (every bucket of the account).
 */
export async function bucketFilter(
  ctx: ToolContext,
  bucketSid: string | undefined,
): Promise<{ bucketSid?: string; bucketSids?: string[] }> {
  if (bucketSid !== undefined) {
    await checkedBucket(ctx, bucketSid);
    return { bucketSid };
  }
  return ctx.scope.bucketSids.length ? { bucketSids: ctx.scope.bucketSids } : {};
}

/** The most buckets a tool reads one by one (search_requests, get_request, list_buckets). */
export const MAX_BUCKETS = 50;

/**
 * The buckets the token covers, as records, oldest first: the listed ones, or every bucket of the
 * account. `more` is true when there were more than MAX_BUCKETS.
 */
export async function bucketsInScope(ctx: ToolContext): Promise<{ buckets: Bucket[]; more: boolean }> {
  const out: Bucket[] = [];
  for (let page = 1; out.length <= MAX_BUCKETS; page++) {
    const res = await ctx.deps.buckets.list(ctx.scope.accountSid, {
      page,
      limit: 100,
      sort: 'createdAt',
      order: 'asc',
    });
    const listed = ctx.scope.bucketSids;
    out.push(...res.records.filter((b) => !listed.length || listed.includes(b.sid)));
    if (!res.hasMore) break;
  }
  return { buckets: out.slice(0, MAX_BUCKETS), more: out.length > MAX_BUCKETS };
}

/** The bucket sids a per-bucket read covers: the caller's bucket (checked) or every bucket in scope. */
export async function bucketSidsToRead(
  ctx: ToolContext,
  bucketSid: string | undefined,
): Promise<{ sids: string[]; more: boolean }> {
  if (bucketSid !== undefined) {
    await checkedBucket(ctx, bucketSid);
    return { sids: [bucketSid], more: false };
  }
  const { buckets, more } = await bucketsInScope(ctx);
  return { sids: buckets.map((b) => b.sid), more };
}
