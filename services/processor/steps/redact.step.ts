import { changed, ok, type Step } from '../pipeline.js';
import { redactRecord, type CompiledRedaction } from '../redaction.js';
import { redactSensitive, SENSITIVE_RECORD_FIELDS } from '../sensitive/index.js';
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
 * Server-side redaction (spec 2.6), before the record is stored or handed to a workflow action:
 * Shape B rules (`redactAt: server` field paths, redaction.ts) first, then Shape A rules (predefined
 * and custom types, sensitive/; `client` ones too, as a safety net behind the SDKs). Returns
 * `changed` whenever a rule of the record's environment applied (Shape B: conservatively, whether
 * or not its field was present; Shape A: when something was redacted), `ok` otherwise.
 *
 * A record Shape A changed gets `redacted: true` and keeps the request and response sizes as
 * received: a part without `size` gets the size of its body before any redaction. When Shape A
 * also changed a field of the record itself (`endpoint`, `traces`, `tags`, `note`, `contextSid`),
 * the record is serialised: the sink writes only replaced parts into a received line.
 */
export const redactStep: Step = (record, ctx) => {
  const { redactions, sensitive } = ctx.rules;
  if (redactions.length === 0 && sensitive === null) return ok(record);
  const env = typeof record.environmentSid === 'string' ? record.environmentSid : '';
  let rules: readonly CompiledRedaction[] = redactions;
  if (redactions.some((r) => r.environments !== null))
    rules = redactions.filter((r) => redactsIn(r.environments, env));

  // Sizes as received, taken before Shape B rewrites a body (only needed when Shape A may follow).
  let reqSize: number | undefined;
  let resSize: number | undefined;
  if (rules.length && sensitive !== null) {
    if (!hasSize(record.request)) reqSize = bodySize(record.request);
    if (record.response && !hasSize(record.response)) resSize = bodySize(record.response);
  }
  if (rules.length) redactRecord(record, rules);
  if (sensitive === null) return rules.length ? changed(record) : ok(record);

  const res = redactSensitive(record, sensitive);
  // Nothing redacted: the line is stored as received, once the sink checked it hides nothing.
  if (!res.redacted) return rules.length ? changed(record) : ok(record, { checkLine: true });
  // redactSensitive copies the parts it changes, so `record` still holds the bodies it received.
  // The copies then replace the parts of `record` itself: whatever still holds the record (a
  // dead letter written after a later failure) holds the redacted one.
  const { request, response } = res.record;
  if (request !== record.request && !hasSize(record.request))
    request.size = reqSize ?? bodySize(record.request);
  if (response && response !== record.response && record.response && !hasSize(record.response))
    response.size = resSize ?? bodySize(record.response);
  record.request = request;
  if (response !== record.response) record.response = response;
  let fields = false;
  const target: Record<string, unknown> = record;
  for (const f of SENSITIVE_RECORD_FIELDS)
    if (res.record[f] !== target[f]) {
      target[f] = res.record[f];
      fields = true;
    }
  record.redacted = true;
  // Without Shape B rules (which rewrite in place) nor a changed record field, the change is the
  // copies and the flag.
  return changed(record, { added: ['redacted'], replacedParts: rules.length === 0 && !fields });
};
