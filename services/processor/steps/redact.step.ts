import { ok, type Step } from '../pipeline.js';
import { redactedCopy, type CompiledRedaction } from '../redaction.js';
import { redactSensitive } from '../sensitive/index.js';
import { redactsIn } from '../rule-environment.js';

type Part = Record<string, unknown>;

/** A part's size as row.mapper.ts computes it when the record does not give one. */
function bodySize(part: Part): number {
  const body = part.body;
  if (body == null) return 0;
  return Buffer.byteLength(typeof body === 'string' ? body : JSON.stringify(body));
}

const hasSize = (part: Part | null | undefined) => typeof part?.size === 'number' && part.size >= 0;

/**
 * Server-side redaction (docs/rules.md), before the record is stored or handed to a workflow action:
 * Field rules (`redactAt: server` field paths, redaction.ts) first, then sensitive-data rules (predefined
 * and custom types, sensitive/; `client` ones too, as a safety net behind the SDKs). Both work on
 * copies: the record received stays as it came, and the result is a copy whenever a rule of the
 * record's environment applied (field rules: whether or not its field was present; sensitive-data rules: when
 * something was redacted), the record itself otherwise.
 *
 * A record a sensitive-data rule changed gets `redacted: true` and keeps the request and response sizes as
 * received: a part such a rule changed that has no `size` gets the size of its body as received.
 */
export const redactStep: Step = (record, ctx) => {
  const { redactions, sensitive } = ctx.rules;
  if (redactions.length === 0 && sensitive === null) return ok(record);
  const env = typeof record.environmentSid === 'string' ? record.environmentSid : '';
  let rules: readonly CompiledRedaction[] = redactions;
  if (redactions.some((r) => r.environments !== null))
    rules = redactions.filter((r) => redactsIn(r.environments, env));

  const fieldRedacted = rules.length ? redactedCopy(record, rules) : record;
  if (sensitive === null) return ok(fieldRedacted);
  const res = redactSensitive(fieldRedacted, sensitive);
  if (!res.redacted) return ok(fieldRedacted);
  // redactSensitive returns a copy of the record, with copies of the parts it changed.
  const out = res.record;
  if (out.request !== fieldRedacted.request && !hasSize(record.request))
    out.request.size = bodySize(record.request);
  const { response } = out;
  if (response && response !== fieldRedacted.response && record.response && !hasSize(record.response))
    response.size = bodySize(record.response);
  out.redacted = true;
  return ok(out);
};
