import type { Logger } from '../shared/logger.js';
import { compilePathPattern, type PathMatcher } from './path-pattern.js';
import { compileRedaction, type CompiledRedaction } from './redaction.js';
import type { AccountRules, ExclusionRule } from './rule-snapshot.js';
import { compileWorkflow, type CompiledWorkflow } from './triggers.js';

/**
 * The processor's view of one account's rules: every rule compiled once when the snapshot loads
 * it (path matchers, parsed field paths, trigger conditions), and per-bucket lists built on first
 * use, so a record costs only the environment check and the matchers of its bucket's rules.
 */

export interface CompiledExclusion {
  sid: string;
  /** upper-case method, or null for every method */
  method: string | null;
  statusCode: number | null;
  path: PathMatcher;
  buckets: ReadonlySet<string> | null;
  environments: ReadonlySet<string> | null;
}

export interface BucketRules {
  accountName: string;
  bucketName: string;
  exclusions: readonly CompiledExclusion[];
  redactions: readonly CompiledRedaction[];
  workflows: readonly CompiledWorkflow[];
}

export interface ProcessorRules {
  accountSid: string;
  forBucket(bucketSid: string): BucketRules;
}

export function compileExclusion(rule: ExclusionRule): CompiledExclusion {
  const m = rule.method.trim().toUpperCase();
  return {
    sid: rule.sid,
    method: m === '*' || m === '' ? null : m,
    statusCode: rule.statusCode,
    path: compilePathPattern(rule.pathPattern),
    buckets: rule.buckets ? new Set(rule.buckets) : null,
    environments: rule.environments ? new Set(rule.environments) : null,
  };
}

const inScope = (set: ReadonlySet<string> | null, v: string) => set === null || set.has(v);

export function compileProcessorRules(rules: AccountRules, log?: Logger): ProcessorRules {
  const exclusions = rules.exclusions.map(compileExclusion);
  const redactions: CompiledRedaction[] = [];
  for (const r of rules.redactions) {
    const c = compileRedaction(r);
    // A path the API should have refused (or one stored before a syntax change) skips that rule only.
    if (c.ok) redactions.push(c.rule);
    else log?.warn({ redactionSid: c.sid, error: c.error }, 'redaction rule skipped: invalid fieldPath');
  }
  const workflows = rules.workflows.map(compileWorkflow).filter((w): w is CompiledWorkflow => w !== null);
  const perBucket = new Map<string, BucketRules>();
  return {
    accountSid: rules.accountSid,
    forBucket(bucketSid) {
      let b = perBucket.get(bucketSid);
      if (!b) {
        b = {
          accountName: rules.accountName,
          bucketName: rules.bucketNames.get(bucketSid) ?? '',
          exclusions: exclusions.filter((x) => inScope(x.buckets, bucketSid)),
          redactions: redactions.filter((x) => inScope(x.buckets, bucketSid)),
          workflows: workflows.filter((w) => w.bucketSid === bucketSid),
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
  redactions: [],
  workflows: [],
};

/** Rules of the record's environment (null/empty environment lists mean every environment). */
export function forEnvironment<T extends { environments: ReadonlySet<string> | null }>(
  list: readonly T[],
  environmentSid: unknown,
): T[] {
  const env = typeof environmentSid === 'string' ? environmentSid : '';
  return list.filter((x) => x.environments === null || x.environments.has(env));
}
