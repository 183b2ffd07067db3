import type { preValidationAsyncHookHandler } from 'fastify';
import { validate as isValidCron, validateDetailed as explainCron } from 'node-cron';
import type { WorkflowCreate, WorkflowUpdate } from '../../../schemas/workflow.schema.js';
import { validation } from '../../shared/errors.js';
import type { WorkflowAction, WorkflowInput, WorkflowTrigger } from './workflows.repository.js';

/**
 * A workflow body as written to the API and as stored: methods upper-cased before validation, the
 * checks the JSON schema cannot make (cron expression, time zone, window lengths) and the normal
 * form the repository stores (webhook method default, conditions per trigger type).
 */

const upper = (o: unknown): void => {
  const v = o as { method?: unknown } | null;
  if (v && typeof v === 'object' && typeof v.method === 'string') v.method = v.method.toUpperCase();
};

/** HTTP methods in conditions and webhook configs are case-insensitive: upper-case before validation. */
export const upperCaseMethods: preValidationAsyncHookHandler = async (req) => {
  const body = req.body as { trigger?: { conditions?: unknown }; actions?: unknown } | null;
  if (!body || typeof body !== 'object') return;
  if (body.trigger && typeof body.trigger === 'object' && Array.isArray(body.trigger.conditions))
    body.trigger.conditions.forEach(upper);
  if (Array.isArray(body.actions))
    for (const a of body.actions as { type?: unknown; config?: unknown }[])
      if (a && typeof a === 'object' && a.type === 'webhook') upper(a.config);
};

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };
/** The longest threshold window: what the per-minute aggregates keep by default. */
const MAX_WINDOW_SECONDS = 30 * 86_400;

function cronProblem(cron: string): string | null {
  let valid = false;
  try {
    valid = isValidCron(cron);
  } catch {
    valid = false;
  }
  if (valid) return null;
  const why = explainCron(cron).errors[0]?.message;
  return `is not a valid cron expression${why ? `: ${why}` : ''}`;
}

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** Checks beyond the schema (cron, time zone, window length) and the stored normal form. */
export function normalise(body: WorkflowCreate | WorkflowUpdate): WorkflowInput {
  const t = body.trigger;
  const details: Record<string, string> = {};
  if (t.type === 'schedule') {
    const problem = cronProblem(t.schedule ?? '');
    if (problem) details['body.trigger.schedule'] = problem;
    if (t.timezone !== undefined && !isTimeZone(t.timezone))
      details['body.trigger.timezone'] = 'is not a known IANA time zone';
  }
  if (t.type === 'threshold')
    (t.conditions ?? []).forEach((c, i) => {
      const m = /^(\d+)([smhd])$/.exec(String(c.timeWindow));
      if (m && Number(m[1]) * UNIT_SECONDS[m[2]!]! > MAX_WINDOW_SECONDS)
        details[`body.trigger.conditions.${i}.timeWindow`] = 'must be at most 30 days';
    });
  if (t.type === 'slo_burn')
    (t.conditions ?? []).forEach((c, i) => {
      for (const k of ['longWindow', 'shortWindow'] as const) {
        const m = /^(\d+)([mhd])$/.exec(c[k]);
        if (m && Number(m[1]) * UNIT_SECONDS[m[2]!]! > MAX_WINDOW_SECONDS)
          details[`body.trigger.conditions.${i}.${k}`] = 'must be at most 30 days';
      }
    });
  if (Object.keys(details).length) throw validation('Request body is invalid', details);

  const trigger: WorkflowTrigger = {
    type: t.type,
    conditions:
      t.type === 'schedule' || t.type === 'regression'
        ? []
        : t.type === 'slo_burn'
          ? (t.conditions ?? []).map((c) => ({ ...c, severity: c.severity ?? 'page' }))
          : (t.conditions ?? []),
    ...(t.type === 'schedule' ? { schedule: t.schedule! } : {}),
    ...(t.type === 'schedule' && t.timezone !== undefined ? { timezone: t.timezone } : {}),
    ...(t.type === 'threshold' && t.perConsumer === true ? { perConsumer: true } : {}),
    ...(t.type === 'slo_burn' ? { sloSid: t.sloSid } : {}),
  };
  const actions: WorkflowAction[] = body.actions.map((a) => ({
    type: a.type,
    // Defaults inside oneOf branches are not applied by ajv, so the webhook method default is here.
    config: a.type === 'webhook' ? { method: 'POST', ...a.config } : a.config,
    order: a.order ?? 0,
  }));
  return { name: body.name, description: body.description ?? '', trigger, actions, isActive: body.isActive };
}
