import { createHash } from 'node:crypto';
import type { ActionJob } from '../../schemas/action-job.schema.js';
import { SID_PREFIX } from '../shared/ids.js';
import { compilePathPattern, pathOnly, type PathMatcher } from '../shared/rules.js';
import type { StoredRecord } from './pipeline.js';
import type { WorkflowRule } from './rule-snapshot.js';

/**
 * Request and error triggers (docs/workflows.md), evaluated per stored record after redaction. A trigger's
 * `conditions` is an array of condition objects; every condition must match, and inside one
 * condition every field it gives (`path` with `*` wildcards, `method` or `*`, `statusCode`, and
 * `consumer` / `group`: the record's consumer id and group, exactly) must match. An empty array matches every request. `error` triggers fire only for status >= 400.
 * Threshold and schedule triggers belong to the scheduler.
 */

export type ProcessorTriggerType = 'request' | 'error';

export interface RecordFacts {
  method: string;
  path: string;
  statusCode: number | null;
  /** the record's consumer id and group (docs/consumers.md), '' when none */
  consumer: string;
  group: string;
}

type Check = (f: RecordFacts) => boolean;

export interface CompiledWorkflow {
  sid: string;
  name: string;
  bucketSid: string;
  environmentSid: string;
  type: ProcessorTriggerType;
  matches: Check;
}

const ALL_ALIASES = new Set(['*', 'all', 'any', '']);

/** statusCode conditions: 500, "500", "5xx", "4**", or a list of those. */
function statusCheck(v: unknown): Check | null {
  if (v === undefined || v === null) return null;
  if (Array.isArray(v)) {
    const checks = v.map(statusCheck).filter((c): c is Check => c !== null);
    return checks.length ? (f) => checks.some((c) => c(f)) : null;
  }
  if (typeof v === 'number') return (f) => f.statusCode === v;
  if (typeof v === 'string') {
    const s = v.trim().toLowerCase();
    if (ALL_ALIASES.has(s)) return null;
    if (/^\d{3}$/.test(s)) {
      const n = Number(s);
      return (f) => f.statusCode === n;
    }
    const cls = /^([1-5])(?:xx|\*\*)$/.exec(s);
    if (cls) {
      const lo = Number(cls[1]) * 100;
      return (f) => f.statusCode !== null && f.statusCode >= lo && f.statusCode < lo + 100;
    }
    // An unreadable status condition never matches rather than matching everything.
    return () => false;
  }
  return () => false;
}

function methodCheck(v: unknown): Check | null {
  if (typeof v !== 'string') return null;
  const m = v.trim().toUpperCase();
  if (ALL_ALIASES.has(m.toLowerCase())) return null;
  return (f) => f.method === m;
}

function pathCheck(v: unknown): Check | null {
  if (typeof v !== 'string' || v === '' || v === '*') return null;
  const match: PathMatcher = compilePathPattern(v);
  return (f) => match(f.path);
}

/** `consumer` / `group` conditions: the exact id or group. */
function textCheck(v: unknown, field: 'consumer' | 'group'): Check | null {
  if (typeof v !== 'string' || v === '') return null;
  return (f) => f[field] === v;
}

/** `{field, value}` conditions are read as `{[field]: value}`. */
function normalise(c: Record<string, unknown>): Record<string, unknown> {
  if (typeof c.field === 'string' && 'value' in c) return { [c.field]: c.value };
  return c;
}

export function compileConditions(conditions: readonly Record<string, unknown>[]): Check {
  const checks: Check[] = [];
  for (const raw of conditions) {
    const c = normalise(raw);
    for (const check of [
      pathCheck(c.path),
      methodCheck(c.method),
      statusCheck(c.statusCode ?? c.status),
      textCheck(c.consumer, 'consumer'),
      textCheck(c.group, 'group'),
    ])
      if (check) checks.push(check);
  }
  if (checks.length === 0) return () => true;
  return (f) => checks.every((c) => c(f));
}

export function compileWorkflow(w: WorkflowRule): CompiledWorkflow | null {
  const type = w.trigger.type;
  if (type !== 'request' && type !== 'error') return null;
  const cond = compileConditions(w.trigger.conditions);
  const matches: Check =
    type === 'error' ? (f) => f.statusCode !== null && f.statusCode >= 400 && cond(f) : cond;
  return {
    sid: w.sid,
    name: w.name,
    bucketSid: w.bucketSid,
    environmentSid: w.environmentSid,
    type,
    matches,
  };
}

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * The execution sid of (request, workflow). Deterministic on purpose: a block re-processed after a
 * crash yields the same sid for the same hit, so the stored record (deduplicated by ClickHouse)
 * and a re-sent job agree, and the action runner can ignore an execution it already knows.
 */
export function executionSidFor(requestSid: string, workflowSid: string): string {
  const d = createHash('sha256').update(`${requestSid}\u0000${workflowSid}`).digest();
  let body = '';
  for (let i = 0; i < 27; i++) body += BASE62[d[i]! % 62];
  return SID_PREFIX.execution + body;
}

export function factsOf(r: StoredRecord): RecordFacts {
  const method = typeof r.request.method === 'string' ? r.request.method.toUpperCase() : '';
  const path = typeof r.request.path === 'string' ? pathOnly(r.request.path) : '';
  const sc = r.response?.statusCode;
  const c = consumerOf(r);
  return {
    method,
    path,
    statusCode: typeof sc === 'number' ? sc : null,
    consumer: c?.id ?? '',
    group: c?.group ?? '',
  };
}

/** The record's consumer (the one it carried or the identification step gave it), if any. */
function consumerOf(r: StoredRecord): { id: string; name: string | null; group: string | null } | null {
  const c = r.consumer;
  if (typeof c !== 'object' || c === null) return null;
  const { id, name, group } = c as Record<string, unknown>;
  if (typeof id !== 'string' || id === '') return null;
  return {
    id,
    name: typeof name === 'string' ? name : null,
    group: typeof group === 'string' ? group : null,
  };
}

export interface JobContextNames {
  accountName: string;
  bucketName: string;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

function message(type: ProcessorTriggerType, f: RecordFacts, w: CompiledWorkflow): string {
  const what = `${f.method || '?'} ${f.path || '/'}`;
  return type === 'error'
    ? `Error ${f.statusCode ?? ''} on ${what} (workflow "${w.name}")`
    : `Request ${what} answered ${f.statusCode ?? 'no status'} (workflow "${w.name}")`;
}

/** The job of one hit (payload of `workflow.actions`, schema `actionJob`). */
export function buildJob(
  r: StoredRecord,
  w: CompiledWorkflow,
  f: RecordFacts,
  names: JobContextNames,
  executionSid: string,
): ActionJob {
  const req = r.request;
  const res = r.response ?? null;
  // A record without an environment (the existing SDKs send none) fires in the workflow's.
  const env = recordEnvironment(r) ?? (w.environmentSid !== '*' ? w.environmentSid : null);
  const duration = num(r.timings?.duration);
  const consumer = consumerOf(r);
  return {
    v: 1,
    executionSid,
    accountSid: r.accountSid,
    workflowSid: w.sid,
    bucketSid: r.bucketSid,
    environmentSid: env,
    trigger: { type: w.type, message: message(w.type, f, w) },
    requestSid: r.sid,
    createdAt: new Date().toISOString(),
    context: {
      request: {
        method: typeof req.method === 'string' ? req.method : null,
        path: typeof req.path === 'string' ? req.path : null,
        headers: req.headers ?? null,
        body: req.body ?? null,
        query: req.queryString ?? null,
      },
      response: {
        statusCode: f.statusCode,
        headers: res?.headers ?? null,
        body: res?.body ?? null,
        size: num(res?.size),
      },
      // responseTime: the record's total duration in ms (what `{{timings.responseTime}}` users expect).
      timings: { duration, responseTime: duration },
      bucket: { sid: r.bucketSid, name: names.bucketName },
      account: { name: names.accountName },
      // Environments have no name of their own (docs/auth.md): the sid is the name.
      environment: { name: env },
      ...(consumer ? { consumer } : {}),
    },
  };
}

/** The record's environment sid, or null when it has none (null, absent or ''). */
function recordEnvironment(r: StoredRecord): string | null {
  return typeof r.environmentSid === 'string' && r.environmentSid !== '' ? r.environmentSid : null;
}

/**
 * Workflows of the record's bucket and environment that match it ('*' as a workflow environment =
 * every one). A record without an environment — the wire format of the existing SDKs has no such
 * field — belongs to every environment of its bucket: every workflow of the bucket evaluates it
 * (docs/workflows.md "Environments").
 */
export function evaluateTriggers(
  r: StoredRecord,
  workflows: readonly CompiledWorkflow[],
  names: JobContextNames,
): ActionJob[] {
  if (workflows.length === 0) return [];
  const env = recordEnvironment(r);
  let facts: RecordFacts | undefined;
  const jobs: ActionJob[] = [];
  for (const w of workflows) {
    if (env !== null && w.environmentSid !== '*' && w.environmentSid !== env) continue;
    facts ??= factsOf(r);
    if (!w.matches(facts)) continue;
    jobs.push(buildJob(r, w, facts, names, executionSidFor(r.sid, w.sid)));
  }
  return jobs;
}
