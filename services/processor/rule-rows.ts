import type { RedactionType } from '../shared/rules.js';
import type {
  CriteriaExclusionRule,
  ExclusionRule,
  RedactionRule,
  SensitiveRedactionRule,
  WorkflowRule,
} from './rule-snapshot.js';
import type { Level, RuleScope } from './sensitive/index.js';

/**
 * The Postgres rows the rule snapshot reads (exclusions, redactions and workflows of every shape)
 * and their mapping to the rules the processor evaluates: empty scope lists mean "everywhere"
 * (null), workflow triggers and actions are read defensively from their JSON columns.
 */

export interface ExclusionRow {
  sid: string;
  account_sid: string;
  shape: 'A' | 'B';
  name: string | null;
  path_pattern: string | null;
  method: string;
  status_code: number | null;
  criteria: string | null;
  buckets: string[] | null;
  environments: string[] | null;
}

export interface RedactionRow {
  sid: string;
  account_sid: string;
  shape: 'A' | 'B';
  name: string | null;
  field_path: string | null;
  redaction_type: RedactionType | null;
  replacement_value: string | null;
  type: string | null;
  pattern: string | null;
  apply_to: 'key' | 'value' | null;
  level: Level | null;
  scopes: string[] | null;
  buckets: string[] | null;
  environments: string[] | null;
}

export interface WorkflowRow {
  sid: string;
  account_sid: string;
  environment_sid: string;
  bucket_sid: string;
  name: string;
  description: string;
  trigger: unknown;
  actions: unknown;
  created_at: Date;
  updated_at: Date | null;
}

const scope = (v: string[] | null): string[] | null => (v && v.length ? v : null);

export function toExclusion(r: ExclusionRow): ExclusionRule {
  return {
    sid: r.sid,
    accountSid: r.account_sid,
    name: r.name ?? '',
    pathPattern: r.path_pattern ?? '',
    method: r.method,
    statusCode: r.status_code,
    buckets: scope(r.buckets),
    environments: scope(r.environments),
  };
}

export function toCriteriaExclusion(r: ExclusionRow): CriteriaExclusionRule {
  return {
    sid: r.sid,
    accountSid: r.account_sid,
    criteria: r.criteria ?? '',
    buckets: scope(r.buckets),
    environments: scope(r.environments),
  };
}

export function toRedaction(r: RedactionRow): RedactionRule {
  return {
    sid: r.sid,
    accountSid: r.account_sid,
    name: r.name ?? '',
    fieldPath: r.field_path ?? '',
    // A NULL type (a row the API should not have stored) fails compileRedaction: the rule is skipped.
    redactionType: r.redaction_type ?? ('' as RedactionType),
    replacementValue: r.replacement_value,
    buckets: scope(r.buckets),
    environments: scope(r.environments),
  };
}

export function toSensitiveRedaction(r: RedactionRow): SensitiveRedactionRule {
  return {
    sid: r.sid,
    accountSid: r.account_sid,
    type: r.type ?? '',
    pattern: r.pattern,
    applyTo: r.apply_to,
    // A NULL level fails compilation: the rule is skipped with a warning, never applied half-way.
    level: r.level ?? ('' as Level),
    scopes: scope(r.scopes) as RuleScope[] | null,
    buckets: scope(r.buckets),
    environments: scope(r.environments),
  };
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export function toWorkflow(r: WorkflowRow): WorkflowRule {
  const t = isObject(r.trigger) ? r.trigger : {};
  const conditions = Array.isArray(t.conditions) ? t.conditions.filter(isObject) : [];
  const actions = (Array.isArray(r.actions) ? r.actions.filter(isObject) : [])
    .map((a) => ({
      type: typeof a.type === 'string' ? a.type : '',
      config: isObject(a.config) ? a.config : {},
      order: typeof a.order === 'number' ? a.order : 0,
    }))
    .sort((a, b) => a.order - b.order);
  return {
    sid: r.sid,
    accountSid: r.account_sid,
    environmentSid: r.environment_sid,
    bucketSid: r.bucket_sid,
    name: r.name,
    description: r.description,
    trigger: {
      type: typeof t.type === 'string' ? t.type : '',
      conditions,
      ...(typeof t.schedule === 'string' ? { schedule: t.schedule } : {}),
    },
    actions,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at ? r.updated_at.toISOString() : null,
  };
}
