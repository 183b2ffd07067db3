import type { ActionJob } from '../../schemas/action-job.schema.js';

/**
 * `{{…}}` template substitution in action configs (docs/workflows.md). Pure and total: any input gives a
 * result, nothing throws. Rules (docs/workflows.md "Template variables"):
 * - a known variable is replaced by its value: strings as they are, numbers and booleans as text,
 *   objects and arrays as JSON, null/absent as the empty string;
 * - a known variable may be followed by a deeper path into an object value
 *   (`{{request.headers.x-request-id}}`, `{{request.body.user.id}}`); header names match in any
 *   case; a body that is a JSON string is parsed for such a path;
 * - anything else (unknown name, deeper path that does not exist, malformed braces) stays visible
 *   exactly as written.
 */

/** The variables of the interface (docs/workflows.md), plus workflow/execution ids (documented extras). */
export const TEMPLATE_VARIABLES: Readonly<Record<string, readonly string[]>> = {
  request: ['method', 'path', 'headers', 'body', 'query'],
  response: ['statusCode', 'headers', 'body', 'size'],
  timings: ['duration', 'responseTime'],
  bucket: ['name', 'sid'],
  account: ['name'],
  environment: ['name'],
  metric: ['value', 'threshold', 'timeWindow'],
  consumer: ['id', 'name', 'group'],
  slo: [
    'sid',
    'name',
    'objective',
    'severity',
    'burnRate',
    'shortBurnRate',
    'threshold',
    'longWindow',
    'shortWindow',
  ],
  release: ['eventSid', 'name', 'startedAt', 'regressed', 'endpoints', 'consumers'],
  trigger: ['type', 'message'],
  workflow: ['sid', 'name'],
  execution: ['sid'],
};

export type TemplateVars = Record<string, Record<string, unknown> | undefined>;

/** The template variables of one job (context of the action job + workflow identity). */
export function templateVars(job: ActionJob, workflow: { sid: string; name: string }): TemplateVars {
  const c = job.context;
  return {
    request: c.request,
    response: c.response,
    timings: c.timings,
    bucket: c.bucket,
    account: c.account,
    environment: c.environment,
    metric: c.metric,
    consumer: c.consumer,
    slo: c.slo,
    release: c.release,
    trigger: job.trigger,
    workflow: { sid: workflow.sid, name: workflow.name },
    execution: { sid: job.executionSid },
  };
}

const PATTERN = /\{\{\s*([A-Za-z_][\w-]*(?:\.[\w-]+)*)\s*\}\}/g;
const UNKNOWN = Symbol('unknown');
const MAX_DEPTH = 32;

export function renderString(template: string, vars: TemplateVars): string {
  if (!template.includes('{{')) return template;
  try {
    return template.replace(PATTERN, (whole, name: string) => {
      const value = lookup(vars, name);
      return value === UNKNOWN ? whole : stringify(value);
    });
  } catch {
    // NOTE: never crash an action on a template; the raw text is the most useful fallback.
    return template;
  }
}

/** Substitutes every string inside a value (objects and arrays recursively; keys are kept). */
export function renderDeep<T>(value: T, vars: TemplateVars, depth = 0): T {
  if (typeof value === 'string') return renderString(value, vars) as T;
  if (depth >= MAX_DEPTH || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v: unknown) => renderDeep(v, vars, depth + 1)) as T;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>))
    out[k] = renderDeep(v, vars, depth + 1);
  return out as T;
}

function lookup(vars: TemplateVars, name: string): unknown {
  const [root, field, ...rest] = name.split('.');
  if (!root || !field || !TEMPLATE_VARIABLES[root]?.includes(field)) return UNKNOWN;
  let value: unknown = vars[root]?.[field];
  const caseless = field === 'headers';
  for (const key of rest) {
    value = child(value, key, caseless);
    if (value === UNKNOWN) return UNKNOWN;
  }
  return value;
}

function child(value: unknown, key: string, caseless: boolean): unknown {
  let v = value;
  if (typeof v === 'string' && /^\s*[[{]/.test(v)) {
    try {
      v = JSON.parse(v) as unknown;
    } catch {
      return UNKNOWN;
    }
  }
  if (Array.isArray(v)) {
    const i = /^\d+$/.test(key) ? Number(key) : -1;
    return i >= 0 && i < v.length ? (v[i] as unknown) : UNKNOWN;
  }
  if (v === null || typeof v !== 'object') return UNKNOWN;
  const obj = v as Record<string, unknown>;
  if (Object.prototype.hasOwnProperty.call(obj, key)) return obj[key];
  if (caseless) {
    const lower = key.toLowerCase();
    for (const [k, val] of Object.entries(obj)) if (k.toLowerCase() === lower) return val;
  }
  return UNKNOWN;
}

function stringify(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return '';
  }
}
