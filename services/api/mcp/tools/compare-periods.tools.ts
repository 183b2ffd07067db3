import { AppError } from '../../../shared/errors.js';
import { MINUTE, rangeOut, resolveRange, type Query, type TimeRange } from '../../metrics/metrics-range.js';
import { bucketFilter, ToolError, visibleEvent, type ToolContext } from '../mcp.context.js';
import type { COMPARE_SORTS } from '../mcp.inputs.js';
import { comparePeriodsInput } from '../mcp.inputs.js';
import { fitList } from '../mcp.output.js';
import { ALL_GROUPS, changeOf, cutAt, r3, totalsOf } from './metrics.tools.js';
import { defineTool } from './tool.js';

/**
 * MCP `compare_periods`: two periods per endpoint template, before and after an event marker or
 * between four explicit dates, judged by the release-impact rule (docs/events-mcp.md).
 */

interface CompareArgs {
  eventSid?: string;
  windowMinutes: number;
  beforeStartDate?: string;
  beforeEndDate?: string;
  afterStartDate?: string;
  afterEndDate?: string;
  bucketSid?: string;
  method?: string;
  consumer?: string;
  sortBy: (typeof COMPARE_SORTS)[number];
  limit: number;
}

/** An explicit period; errors name the tool's own fields. */
function periodOf(start: string, end: string, startField: string, endField: string): TimeRange {
  try {
    return resolveRange({ startDate: start, endDate: end }, Date.now());
  } catch (err) {
    if (err instanceof AppError && err.status < 500)
      throw new ToolError(`${startField} is after ${endField}`, {
        [startField]: `must not be after ${endField}`,
      });
    throw err;
  }
}

async function periodsOf(ctx: ToolContext, args: CompareArgs) {
  if (args.eventSid !== undefined) {
    const other = ['beforeStartDate', 'beforeEndDate', 'afterStartDate', 'afterEndDate'].filter(
      (f) => args[f as keyof CompareArgs] !== undefined,
    );
    if (other.length)
      throw new ToolError('Pass either eventSid or the four period dates, not both', {
        [other[0]!]: 'not allowed with eventSid',
      });
    const ev = await visibleEvent(ctx, args.eventSid);
    // The marker's minute opens the "after" period: metrics have minute resolution.
    const t = Math.floor(Date.parse(ev.startedAt) / MINUTE) * MINUTE;
    const w = args.windowMinutes * MINUTE;
    return {
      event: { sid: ev.sid, type: ev.type, name: ev.name, startedAt: ev.startedAt },
      before: { start: t - w, end: t - MINUTE },
      after: { start: t, end: t + w - MINUTE },
    };
  }
  const missing = ['beforeStartDate', 'beforeEndDate', 'afterStartDate', 'afterEndDate'].filter(
    (f) => args[f as keyof CompareArgs] === undefined,
  );
  if (missing.length)
    throw new ToolError(`Pass eventSid, or all four period dates (missing: ${missing.join(', ')})`, {
      [missing[0]!]: 'is required without eventSid',
    });
  return {
    event: null,
    before: periodOf(args.beforeStartDate!, args.beforeEndDate!, 'beforeStartDate', 'beforeEndDate'),
    after: periodOf(args.afterStartDate!, args.afterEndDate!, 'afterStartDate', 'afterEndDate'),
  };
}

type Side = { requests: number; errorRate: number; p95ResponseTime: number } | null;

export const comparePeriods = defineTool<CompareArgs>(
  {
    name: 'compare_periods',
    title: 'Compare two periods per endpoint',
    description:
      'Compares two periods per endpoint template: request count, error rate (percent) and p95 response time (ms) before and after, ' +
      'with the change and a verdict regressed / improved / unchanged / insufficient by the release-impact rule ' +
      '(Mann-Whitney U on durations, two-proportion test on errors, minimum effect sizes), largest change of sortBy first. Periods: eventSid (an event marker, e.g. a deployment: windowMinutes before ' +
      'it against windowMinutes from it) or beforeStartDate/beforeEndDate/afterStartDate/afterEndDate. Returns JSON {before, after, endpoints}.',
    inputSchema: comparePeriodsInput,
  },
  async (ctx, args) => {
    // The bucket first: a bucket outside the token is named even when the event is not visible.
    const filter = await bucketFilter(ctx, args.bucketSid);
    const { event, before, after } = await periodsOf(ctx, args);
    const base: Query = {
      accountSid: ctx.scope.accountSid,
      environmentSid: ctx.scope.environmentSid,
      ...filter,
      ...(args.method !== undefined ? { method: args.method } : {}),
      ...(args.consumer !== undefined ? { consumer: args.consumer } : {}),
      range: before,
    };
    const qb = base;
    const qa = { ...base, range: after };
    // The periods as half-open minute spans: a range holds the minute of its end.
    const span = (r: TimeRange): [number, number] => [
      Math.floor(r.start / MINUTE) * MINUTE,
      Math.floor(r.end / MINUTE) * MINUTE + MINUTE,
    ];
    const [pb, pa, tb, ta, verdicts] = await Promise.all([
      ctx.deps.metrics.performance(qb, 'endpoint', ALL_GROUPS),
      ctx.deps.metrics.performance(qa, 'endpoint', ALL_GROUPS),
      totalsOf(ctx, qb),
      totalsOf(ctx, qa),
      // The release-impact rule on the same calls (docs/releases.md "The rule").
      ctx.deps.impact.comparePeriods(
        {
          accountSid: ctx.scope.accountSid,
          bucketSids: filter.bucketSid ? [filter.bucketSid] : (filter.bucketSids ?? null),
          environmentSids: [ctx.scope.environmentSid],
          ...(args.method !== undefined ? { method: args.method } : {}),
          ...(args.consumer !== undefined ? { consumer: args.consumer } : {}),
        },
        span(before),
        span(after),
      ),
    ]);
    const side = (m: (typeof pb.metrics)[number] | undefined): Side =>
      m ? { requests: m.requestCount, errorRate: m.errorRate, p95ResponseTime: m.p95ResponseTime } : null;
    const byGroup = new Map<string, { before: Side; after: Side }>();
    for (const m of pb.metrics) byGroup.set(m.group, { before: side(m), after: null });
    for (const m of pa.metrics) {
      const e = byGroup.get(m.group);
      if (e) e.after = side(m);
      else byGroup.set(m.group, { before: null, after: side(m) });
    }
    const rows = [...byGroup.entries()].map(([endpoint, { before: b, after: a }]) => {
      const nb = b?.requests ?? 0;
      const na = a?.requests ?? 0;
      const judged = verdicts.get(endpoint);
      return {
        endpoint,
        verdict: judged?.verdict ?? 'insufficient',
        reasons: judged?.change.reasons ?? [],
        before: b,
        after: a,
        change: {
          requests: na - nb,
          requestsPercent: nb > 0 ? r3(((na - nb) / nb) * 100) : null,
          errorRatePoints: r3((a?.errorRate ?? 0) - (b?.errorRate ?? 0)),
          // Only measured on both sides: an endpoint new in one period has no p95 change.
          p95ResponseTimeMs: a && b ? r3(a.p95ResponseTime - b.p95ResponseTime) : null,
          p95ResponseTimePercent:
            a && b && b.p95ResponseTime > 0
              ? r3(((a.p95ResponseTime - b.p95ResponseTime) / b.p95ResponseTime) * 100)
              : null,
        },
      };
    });
    const key = (r: (typeof rows)[number]): number | null =>
      args.sortBy === 'p95ResponseTime'
        ? r.change.p95ResponseTimeMs
        : args.sortBy === 'errorRate'
          ? r.change.errorRatePoints
          : r.change.requests;
    rows.sort((x, y) => {
      const kx = key(x);
      const ky = key(y);
      if (kx === null || ky === null) return kx === null ? (ky === null ? 0 : 1) : -1;
      return Math.abs(ky) - Math.abs(kx) || (x.endpoint < y.endpoint ? -1 : 1);
    });
    const out = {
      environmentSid: ctx.scope.environmentSid,
      event,
      before: { ...rangeOut(before), totals: tb },
      after: { ...rangeOut(after), totals: ta },
      change: changeOf(ta, tb),
      sortBy: args.sortBy,
      endpoints: rows.slice(0, args.limit),
      truncated:
        rows.length > args.limit
          ? cutAt(
              'endpoints',
              args.limit,
              rows.length,
              'Raise limit (≤ 100) or narrow with bucketSid or method.',
            )
          : false,
    };
    return fitList(out, 'endpoints', 'Lower limit or narrow with bucketSid or method.', rows.length);
  },
);
