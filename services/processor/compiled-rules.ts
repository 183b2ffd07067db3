import { compileEndpointTemplates, type CompiledEndpointTemplates } from '../shared/endpoint-pattern.js';
import type { Logger } from '../shared/logger.js';
import { compileIdentification, type CompiledIdentification } from './consumer-identification.js';
import { tryCompileExclusionCriteria, type CompiledExclusionCriteria } from './exclusion-criteria.js';
import { compilePathPattern, type PathMatcher } from '../shared/rules.js';
import { compileRedaction, type CompiledRedaction } from './redaction.js';
import type {
  AccountRules,
  CriteriaExclusionRule,
  ExclusionRule,
  SensitiveRedactionRule,
} from './rule-snapshot.js';
import {
  compileSensitiveRules,
  SensitivePatternError,
  SensitiveRuleError,
  validateSensitiveRule,
  type CompiledSensitiveRules,
  type SensitiveRuleInput,
} from './sensitive/index.js';
import { compileWorkflow, type CompiledWorkflow } from './triggers.js';

/**
 * The processor's view of one account's rules: every rule compiled once when the snapshot loads
 * it (path matchers, parsed field paths, criteria, sensitive-data plans, trigger conditions), and
 * per-bucket lists built on first use, so a record costs only the environment check and the
 * matchers of its bucket's rules. A stored rule that does not compile (the API validates, so only
 * a row written around it or a syntax change) is skipped with a warning; the others apply.
 */

/** Path exclusion, compiled. */
export interface CompiledExclusion {
  sid: string;
  /** upper-case method, or null for every method */
  method: string | null;
  statusCode: number | null;
  path: PathMatcher;
  buckets: ReadonlySet<string> | null;
  environments: ReadonlySet<string> | null;
}

/** Criteria exclusion, compiled: the parsed criteria. */
export interface CompiledCriteriaExclusion {
  sid: string;
  criteria: CompiledExclusionCriteria;
  buckets: ReadonlySet<string> | null;
  environments: ReadonlySet<string> | null;
}

export interface BucketRules {
  accountName: string;
  bucketName: string;
  /** Path exclusions, then criteria ones (exclusions.step.ts checks them in this order) */
  exclusions: readonly CompiledExclusion[];
  criteriaExclusions: readonly CompiledCriteriaExclusion[];
  /** Field redactions (JSONPath), applied before the sensitive-data ones */
  redactions: readonly CompiledRedaction[];
  /**
   * Sensitive-data redactions of the bucket (environments are checked per record by the engine); null = none
   */
  sensitive: CompiledSensitiveRules | null;
  workflows: readonly CompiledWorkflow[];
  /** the bucket's consumer identification sources (docs/consumers.md); null = none */
  identification: CompiledIdentification | null;
  /** the bucket's endpoint template rules in order (docs/processing.md); null = none */
  endpointTemplates: CompiledEndpointTemplates | null;
}

export interface ProcessorRules {
  accountSid: string;
  forBucket(bucketSid: string): BucketRules;
}

const setOrNull = (v: readonly string[] | null): ReadonlySet<string> | null => (v ? new Set(v) : null);

export function compileExclusion(rule: ExclusionRule): CompiledExclusion {
  const m = rule.method.trim().toUpperCase();
  return {
    sid: rule.sid,
    method: m === '*' || m === '' ? null : m,
    statusCode: rule.statusCode,
    path: compilePathPattern(rule.pathPattern),
    buckets: setOrNull(rule.buckets),
    environments: setOrNull(rule.environments),
  };
}

function compileCriteriaExclusions(rules: readonly CriteriaExclusionRule[], log?: Logger) {
  const out: CompiledCriteriaExclusion[] = [];
  for (const r of rules) {
    const c = tryCompileExclusionCriteria(r.criteria);
    if (c.ok)
      out.push({
        sid: r.sid,
        criteria: c.compiled,
        buckets: setOrNull(r.buckets),
        environments: setOrNull(r.environments),
      });
    else
      log?.warn(
        { exclusionSid: r.sid, error: c.error.message, position: c.error.position },
        'exclusion rule skipped: invalid criteria',
      );
  }
  return out;
}

function sensitiveInput(r: SensitiveRedactionRule): SensitiveRuleInput {
  return {
    sid: r.sid,
    type: r.type,
    pattern: r.pattern,
    applyTo: r.applyTo,
    level: r.level,
    scopes: r.scopes,
    environments: r.environments,
  };
}

/** The sensitive-data redactions that compile, with their bucket scope. */
function validSensitive(rules: readonly SensitiveRedactionRule[], log?: Logger) {
  const out: { input: SensitiveRuleInput; buckets: ReadonlySet<string> | null }[] = [];
  for (const r of rules) {
    const input = sensitiveInput(r);
    try {
      validateSensitiveRule(input);
      out.push({ input, buckets: setOrNull(r.buckets) });
    } catch (err) {
      if (!(err instanceof SensitiveRuleError || err instanceof SensitivePatternError)) throw err;
      log?.warn(
        { redactionSid: r.sid, error: err.message },
        'redaction rule skipped: invalid sensitive-data redaction',
      );
    }
  }
  return out;
}

const inScope = (set: ReadonlySet<string> | null, v: string) => set === null || set.has(v);

/**
 * `consumerKey`: the HMAC key of hashed credential ids (the processor's, derived from the secrets
 * key); without it no identification source applies.
 */
export function compileProcessorRules(
  rules: AccountRules,
  log?: Logger,
  consumerKey?: Buffer,
): ProcessorRules {
  const exclusions = rules.exclusions.map(compileExclusion);
  const criteriaExclusions = compileCriteriaExclusions(rules.criteriaExclusions, log);
  const redactions: CompiledRedaction[] = [];
  for (const r of rules.redactions) {
    const c = compileRedaction(r);
    if (c.ok) redactions.push(c.rule);
    else log?.warn({ redactionSid: c.sid, error: c.error }, 'redaction rule skipped: invalid fieldPath');
  }
  const sensitive = validSensitive(rules.sensitiveRedactions, log);
  const workflows = rules.workflows.map(compileWorkflow).filter((w): w is CompiledWorkflow => w !== null);
  const perBucket = new Map<string, BucketRules>();
  return {
    accountSid: rules.accountSid,
    forBucket(bucketSid) {
      let b = perBucket.get(bucketSid);
      if (!b) {
        const mine = sensitive.filter((x) => inScope(x.buckets, bucketSid)).map((x) => x.input);
        b = {
          accountName: rules.accountName,
          bucketName: rules.bucketNames.get(bucketSid) ?? '',
          exclusions: exclusions.filter((x) => inScope(x.buckets, bucketSid)),
          criteriaExclusions: criteriaExclusions.filter((x) => inScope(x.buckets, bucketSid)),
          redactions: redactions.filter((x) => inScope(x.buckets, bucketSid)),
          sensitive: mine.length ? compileSensitiveRules(mine) : null,
          workflows: workflows.filter((w) => w.bucketSid === bucketSid),
          identification: consumerKey
            ? compileIdentification(rules.identification.get(bucketSid) ?? [], consumerKey, rules.accountSid)
            : null,
          endpointTemplates: compileEndpointTemplates(rules.endpointTemplates.get(bucketSid) ?? []),
        };
        perBucket.set(bucketSid, b);
      }
      return b;
    },
  };
}

export const NO_RULES: BucketRules = {
  accountName: '',
  bucketName: '',
  exclusions: [],
  criteriaExclusions: [],
  redactions: [],
  sensitive: null,
  workflows: [],
  identification: null,
  endpointTemplates: null,
};
