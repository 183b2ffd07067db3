import { ok, type Step } from '../pipeline.js';
import { redactRecord, type CompiledRedaction } from '../redaction.js';

/**
 * Server-side redaction (spec 2.6), before the record is stored or handed to a workflow action.
 * Only `redactAt: server` rules reach here: client rules are served to SDKs and applied there.
 */
export const redactStep: Step = (record, ctx) => {
  const all = ctx.rules.redactions;
  if (all.length === 0) return ok(record);
  const env = typeof record.environmentSid === 'string' ? record.environmentSid : '';
  let rules: readonly CompiledRedaction[] = all;
  if (all.some((r) => r.environments !== null))
    rules = all.filter((r) => r.environments === null || r.environments.has(env));
  redactRecord(record, rules);
  return ok(record);
};
