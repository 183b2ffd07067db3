import { exclude, ok, type Step } from '../pipeline.js';
import { pathOnly } from '../path-pattern.js';

/**
 * Exclusion rules (spec 2.5): a record whose path matches the rule's pattern, whose method is the
 * rule's (or the rule says `*`) and whose status is the rule's (or the rule's is null) is dropped
 * before anything is stored. Rules are already limited to the bucket; the environment is checked
 * here. The query string is not part of the matched path.
 */
export const exclusionsStep: Step = (record, ctx) => {
  const rules = ctx.rules.exclusions;
  if (rules.length === 0) return ok(record);
  const env = typeof record.environmentSid === 'string' ? record.environmentSid : '';
  const method = typeof record.request.method === 'string' ? record.request.method.toUpperCase() : '';
  const path = typeof record.request.path === 'string' ? pathOnly(record.request.path) : '';
  const sc = record.response?.statusCode;
  const status = typeof sc === 'number' ? sc : null;
  for (const x of rules) {
    if (x.environments !== null && !x.environments.has(env)) continue;
    if (x.method !== null && x.method !== method) continue;
    if (x.statusCode !== null && x.statusCode !== status) continue;
    if (x.path(path)) return exclude(x.sid);
  }
  return ok(record);
};
