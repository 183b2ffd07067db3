import { exclude, ok, type Step } from '../pipeline.js';
import { pathOnly } from '../../shared/rules.js';

const inEnvironment = (set: ReadonlySet<string> | null, env: string) => set === null || set.has(env);

/**
 * Exclusion rules (docs/rules.md), both shapes; a matching record is dropped before anything is stored.
 * Path exclusions first (cheaper): a record whose path matches the rule's pattern, whose method is the
 * rule's (or the rule says `*`) and whose status is the rule's (or the rule's is null); the query
 * string is not part of the matched path. Then criteria exclusions: a record matching the rule's criteria
 * (exclusion-criteria.ts). Any match excludes, so the order does not change the outcome. Rules are
 * already limited to the bucket; the environment is checked here.
 */
export const exclusionsStep: Step = (record, ctx) => {
  const { exclusions, criteriaExclusions } = ctx.rules;
  if (exclusions.length === 0 && criteriaExclusions.length === 0) return ok(record);
  const env = typeof record.environmentSid === 'string' ? record.environmentSid : '';
  if (exclusions.length) {
    const method = typeof record.request.method === 'string' ? record.request.method.toUpperCase() : '';
    const path = typeof record.request.path === 'string' ? pathOnly(record.request.path) : '';
    const sc = record.response?.statusCode;
    const status = typeof sc === 'number' ? sc : null;
    for (const x of exclusions) {
      if (!inEnvironment(x.environments, env)) continue;
      if (x.method !== null && x.method !== method) continue;
      if (x.statusCode !== null && x.statusCode !== status) continue;
      if (x.path(path)) return exclude(x.sid);
    }
  }
  for (const x of criteriaExclusions)
    if (inEnvironment(x.environments, env) && x.criteria.matches(record)) return exclude(x.sid);
  return ok(record);
};
