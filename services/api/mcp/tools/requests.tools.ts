import { AppError } from '../../../shared/errors.js';
import { compileCriteria } from '../../requests/criteria.compiler.js';
import { parseTimeCursor } from '../../tables/pagination.js';
import type { RequestFilters } from '../../requests/requests.repository.js';
import { bucketSidsToRead, ToolError, type ToolContext } from '../mcp.context.js';
import { getRequestInput, searchRequestsInput } from '../mcp.inputs.js';
import { fitList, type Truncation } from '../mcp.output.js';
import { defineTool } from './tool.js';

type Rec = Record<string, unknown>;
const obj = (v: unknown): Rec => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Rec) : {});

/** A path longer than this is cut in a search hit (get_request shows it whole). */
const MAX_HIT_PATH = 300;

interface SearchArgs {
  q?: string;
  startDate?: string;
  endDate?: string;
  bucketSid?: string;
  consumer?: string;
  cursor?: string;
  limit: number;
}

/**
 * The caller's criteria AND the token's environment (and the consumer, when given), compiled by
 * the stream's own compiler.
 */
function criteriaOf(
  ctx: ToolContext,
  q: string | undefined,
  consumer?: string,
): NonNullable<RequestFilters['criteria']> {
  const quoted = consumer === undefined ? '' : ` consumer:${JSON.stringify(consumer)}`;
  const env = compileCriteria(`env:${ctx.scope.environmentSid}${quoted}`, { paramPrefix: 'mcpenv' });
  if (q === undefined || q.trim() === '') return env;
  const user = compileCriteria(q, { field: 'q', paramPrefix: 'q' });
  return { sql: `(${user.sql}) AND (${env.sql})`, params: { ...user.params, ...env.params } };
}

const hitOf = (r: Rec) => {
  const req = obj(r.request);
  const short = (v: unknown) =>
    typeof v === 'string' ? (v.length > MAX_HIT_PATH ? `${v.slice(0, MAX_HIT_PATH)}…` : v) : null;
  return {
    sid: r.sid as string,
    bucketSid: r.bucketSid as string,
    createdAt: r.createdAt as string,
    method: req.method ?? null,
    path: short(req.path),
    endpoint: short(r.endpoint),
    status: obj(r.response).statusCode ?? null,
    durationMs: obj(r.timings).duration ?? null,
  };
};

export const searchRequests = defineTool<SearchArgs>(
  {
    name: 'search_requests',
    title: 'Search captured requests',
    description:
      "Searches the stored requests of this token's environment with the request stream's search language (q), newest first, " +
      'at most 50 hits. Each hit is compact (sid, bucketSid, createdAt, method, path, endpoint, status, durationMs); bodies are never ' +
      'included here: use get_request with a sid. Returns JSON {hits, truncated, nextCursor}: pass nextCursor as cursor ' +
      '(with the same q, startDate, endDate and bucketSid) for the next, older hits.',
    inputSchema: searchRequestsInput,
  },
  async (ctx, args) => {
    if (args.startDate && args.endDate && Date.parse(args.startDate) > Date.parse(args.endDate))
      throw new ToolError('startDate is after endDate', { startDate: 'must not be after endDate' });
    const criteria = criteriaOf(ctx, args.q, args.consumer);
    const cursor = args.cursor === undefined ? undefined : parseTimeCursor(args.cursor);
    const { sids, more } = await bucketSidsToRead(ctx, args.bucketSid);
    const pages = await Promise.all(
      sids.map((b) =>
        ctx.deps.requests.list(
          ctx.scope.accountSid,
          b,
          { page: 1, limit: args.limit, sort: 'createdAt', order: 'desc', cursor },
          { startDate: args.startDate, endDate: args.endDate, criteria },
        ),
      ),
    );
    // Every bucket's page is in (createdAt, sid) order after the same cursor; merged in that order,
    // the first `limit` are the next hits of all of them, and the last one shown is the next cursor.
    const all = pages
      .flatMap((p) => p.records.map((record, i) => ({ record, cursor: p.cursors[i]! })))
      .sort((x, y) => (x.cursor < y.cursor ? 1 : x.cursor > y.cursor ? -1 : 0));
    const shownAll = all.slice(0, args.limit);
    const hits = shownAll.map((h) => hitOf(h.record));
    const cut = pages.some((p) => p.hasMore) || all.length > args.limit;
    const nextCursor = (n: number) => shownAll[n - 1]?.cursor ?? null;
    // The older way on: an endDate just before the last hit, which skips the records sharing its
    // millisecond that were not shown; kept for clients that follow it.
    const nextEndDate = (n: number) => {
      const last = hits[n - 1];
      return last ? new Date(Date.parse(last.createdAt) - 1).toISOString() : null;
    };
    const how = (n: number) =>
      `Call again with cursor=${nextCursor(n) ?? '(none)'} (same q, startDate, endDate and bucketSid) for older requests, or narrow q.`;
    const out = {
      environmentSid: ctx.scope.environmentSid,
      bucketsSearched: sids.length,
      hits,
      truncated: (cut
        ? { field: 'hits', shown: hits.length, total: null, reason: 'limit', howToGetMore: how(hits.length) }
        : false) as Truncation | false,
      nextCursor: cut ? nextCursor(hits.length) : null,
      nextEndDate: cut ? nextEndDate(hits.length) : null,
      ...(more ? { note: 'Only the oldest 50 buckets were searched: pass bucketSid for another one.' } : {}),
    };
    const fitted = fitList(out, 'hits', '');
    if (fitted !== out) {
      const shown = fitted.hits.length;
      const t = fitted.truncated as Truncation;
      return {
        ...fitted,
        truncated: { ...t, howToGetMore: how(shown) },
        nextCursor: nextCursor(shown),
        nextEndDate: nextEndDate(shown),
      };
    }
    return out;
  },
);

/** `[REDACTED]`, or `[REDACTED:<type>]` of a redaction by data type (`[REDACTED:password]`). */
const REDACTED_MARK = /\[REDACTED(?::[^\]\s]{1,100})?\]/;

/**
 * Whether a stored value is what a redaction rule wrote (docs/processing.md, docs/sensitive-data.md):
 * `[REDACTED]` (replace without a value), `[REDACTED:<type>]` (a data type redacted at the `full`
 * level) or a masked value (letters and digits turned into `*`). The dashboard marks the same values
 * (web/src/lib/redaction.ts).
 */
export function looksRedacted(v: unknown): boolean {
  if (typeof v !== 'string') return false;
  if (REDACTED_MARK.test(v)) return true;
  return v.length >= 3 && /^[*\s\-._@:/+()]+$/.test(v) && (v.match(/\*/g)?.length ?? 0) >= 3;
}

/** Paths (`request.headers.authorization`) of the values that look redacted, depth first. */
function redactedPaths(v: unknown, path: string, out: string[], depth = 0): void {
  if (out.length >= 50 || depth > 12) return;
  if (looksRedacted(v)) out.push(path);
  else if (Array.isArray(v)) v.forEach((x, i) => redactedPaths(x, `${path}[${i}]`, out, depth + 1));
  else if (v && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) redactedPaths(x, `${path}.${k}`, out, depth + 1);
}

const parsedBody = (body: unknown): unknown => {
  if (typeof body !== 'string' || !/^\s*[[{]/.test(body)) return body;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return body;
  }
};

/** A body as text cut to `max` characters, its full length stated. */
function cutBody(part: Rec, max: number): Rec {
  if (part.body === undefined || part.body === null) return part;
  const text = typeof part.body === 'string' ? part.body : JSON.stringify(part.body);
  if (text.length <= max) return { ...part, bodyLength: text.length, bodyTruncated: false };
  return { ...part, body: text.slice(0, max), bodyLength: text.length, bodyTruncated: true };
}

interface GetArgs {
  requestSid: string;
  bucketSid?: string;
  maxBodyChars: number;
}

export const getRequest = defineTool<GetArgs>(
  {
    name: 'get_request',
    title: 'One captured request',
    description:
      'One stored request by sid (from search_requests): request and response (method, url, headers, query, bodies), timings, ' +
      'endpoint, tags. Values were redacted by the redaction rules before storage; `redactedValues` lists the paths of values ' +
      'that show it ([REDACTED], [REDACTED:<type>] or masked). Bodies are cut to maxBodyChars with bodyLength the full length. Returns JSON.',
    inputSchema: getRequestInput,
  },
  async (ctx, args) => {
    const { sids } = await bucketSidsToRead(ctx, args.bucketSid);
    const found = await Promise.all(
      sids.map((b) =>
        ctx.deps.requests.get(ctx.scope.accountSid, b, args.requestSid).catch((err: unknown) => {
          if (err instanceof AppError && err.status === 404) return undefined;
          throw err;
        }),
      ),
    );
    const record = found.find((r) => r !== undefined && r.environmentSid === ctx.scope.environmentSid);
    if (!record)
      throw new ToolError(`Request ${args.requestSid} not found in this token's environment and buckets`, {
        requestSid: 'unknown request',
      });
    const redactedValues: string[] = [];
    const request = obj(record.request);
    const response = obj(record.response);
    for (const [name, part] of [
      ['request', request],
      ['response', response],
    ] as const) {
      redactedPaths(part.headers, `${name}.headers`, redactedValues);
      if (name === 'request') redactedPaths(part.queryString, 'request.queryString', redactedValues);
      redactedPaths(parsedBody(part.body), `${name}.body`, redactedValues);
    }
    const traces = Array.isArray(record.traces) ? record.traces : [];
    const tracesText = JSON.stringify(traces);
    return {
      ...record,
      request: cutBody(request, args.maxBodyChars),
      ...(record.response !== undefined && record.response !== null
        ? { response: cutBody(response, args.maxBodyChars) }
        : {}),
      ...(tracesText.length > 2000
        ? { traces: `${traces.length} trace entries (${tracesText.length} characters) omitted` }
        : {}),
      redactedValues,
    };
  },
);

export const REQUEST_TOOLS = [searchRequests, getRequest];
